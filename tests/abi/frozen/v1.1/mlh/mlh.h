/* mlhost plugin C ABI: everything. */
#ifndef MLH_H
#define MLH_H
#include "mlh_abi.h"
#include "mlh_algorithm.h"
#include "mlh_device.h"
#endif
