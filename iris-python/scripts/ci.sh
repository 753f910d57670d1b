#!/usr/bin/env bash
# CI for the Python extension, after `cargo test --workspace --all-features` (whose debug
# build it reuses): builds the wheel with maturin into a venv under target/, installs it and
# runs iris-python/tests with pytest on the cpu backend (no GPU, no PyTorch). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/py-ci
python=${PYTHON:-$(command -v python3.11 || command -v python3)}
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check 'maturin>=1.9,<2' pytest numpy
rm -rf "$venv/wheels"
"$venv/bin/maturin" build --profile dev -m iris-python/Cargo.toml -o "$venv/wheels"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$venv"/wheels/iris_rs-*.whl
# From inside the venv's folder, so the tests import the installed wheel.
(cd "$venv" && IRIS_BACKEND=cpu ./bin/python -m pytest -q ../../iris-python/tests/*.py)
