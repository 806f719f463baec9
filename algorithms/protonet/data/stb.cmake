# Debian's libstb (package libstb-dev): the stb_image, stb_image_resize and stb_image_write
# headers in /usr/include/stb, and a prebuilt library holding their implementations (so no
# STB_*_IMPLEMENTATION is defined here). Gives the imported target Stb::stb.
#
# The one place stb is found, for every build that uses it: protonet's data library both
# inside mlhost's build and on its own against an installed mlhost (this file is installed
# with protonet's sources, so a copy of the folder carries it), and the tests and fuzz
# targets that decode or write images. It is protonet's dependency, not the SDK's: the
# installed mlhost package does not provide it.
# STB_INCLUDE_DIR (the folder holding stb/) and STB_LIBRARY choose another stb.
if(NOT TARGET Stb::stb)
  # stb_image_resize.h: the one the newest stb replaced (by stb_image_resize2.h), which
  # decode.cpp uses.
  find_path(STB_INCLUDE_DIR NAMES stb/stb_image_resize.h DOC "the folder holding stb/stb_image.h")
  find_library(STB_LIBRARY NAMES stb DOC "libstb: the implementations of stb's image headers")
  # Checked, not only found: a STB_INCLUDE_DIR given on the command line is not searched.
  if(NOT EXISTS "${STB_INCLUDE_DIR}/stb/stb_image_resize.h" OR NOT EXISTS "${STB_LIBRARY}")
    message(FATAL_ERROR "protonet's image decoding needs stb's headers (stb/stb_image.h, stb/stb_image_resize.h, "
                        "stb/stb_image_write.h) and its prebuilt library (libstb): on Debian or Ubuntu, "
                        "apt-get install libstb-dev (mlhost's scripts/setup.sh installs it). Found: "
                        "STB_INCLUDE_DIR=${STB_INCLUDE_DIR}, STB_LIBRARY=${STB_LIBRARY}; set them to use another stb.")
  endif()
  # GLOBAL: the tests and fuzz targets of mlhost's build, in other folders, link it too.
  add_library(Stb::stb UNKNOWN IMPORTED GLOBAL)
  set_target_properties(Stb::stb PROPERTIES IMPORTED_LOCATION "${STB_LIBRARY}"
                                            INTERFACE_INCLUDE_DIRECTORIES "${STB_INCLUDE_DIR}")
endif()
