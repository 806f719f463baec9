#!/usr/bin/env bash
# Downloads the Debian 12 packages that scripts/gpu.sh unpacks on a GPU machine that has a
# CUDA PyTorch but no Debian development packages: Boost (DLL, filesystem, program_options),
# spdlog with fmt, nlohmann_json, GoogleTest, stb, zlib headers, libcurl (MLflow tracking) with the two libraries of its that a GPU image may lack (libssh2, OpenLDAP 2.5), and the Fashion-MNIST files
# the GPU tests train ProtoNet on. Run it on Debian 12; apt-get download needs no root.
#   bash scripts/gpu-debs.sh [FOLDER]     (default .debs, about 45 MB; wheels in .whl, 3 MB)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.debs}
packages=(
  libboost1.74-dev libboost-system1.74-dev libboost-system1.74.0
  libboost-filesystem1.74-dev libboost-filesystem1.74.0
  libboost-program-options1.74-dev libboost-program-options1.74.0
  libspdlog-dev libspdlog1.10 libfmt-dev libfmt9
  nlohmann-json3-dev libgtest-dev libgmock-dev
  libstb-dev libstb0 zlib1g-dev
  libcurl4-openssl-dev libcurl4 libssh2-1 libldap-2.5-0
  dataset-fashion-mnist
)
mkdir -p "$out"
cd "$out"
apt-get download "${packages[@]}"
echo "gpu-debs: $(ls ./*.deb | wc -l) packages, $(du -sh . | cut -f1) in $out"
# The Python packages the TRM reference (bench/peers.py) imports that the GPU image's Python
# 3.12 lacks, as wheels in .whl/ beside the .debs' folder; scripts/gpu-lease.sh installs them.
cd ..
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
  pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
echo "gpu-debs: $(ls .whl/*.whl | wc -l) wheels in .whl"
