#!/usr/bin/env bash
# `make wheel-check`: the kit as a platform engineer installs it. Builds the wheel, installs it into a fresh virtual
# environment with the base dependencies only (no Spark, no jsii, no CDKTF bindings), and runs the command there:
# --help, status --help, a summary of the seed; a command that needs an extra says which in one line (exit 2); the
# wheel holds no stand-in and claims no generic top-level module names.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/wheel
rm -rf "$out"
mkdir -p "$out"
python=${PYTHON:-python3}
echo "wheel-check: building the wheel"
rm -rf build  # setuptools' scratch folder: a stale one would add old files to the wheel
.venv/bin/python -m pip wheel -q --no-deps -w "$out/dist" .
wheel=$(ls "$out"/dist/*.whl)
echo "wheel-check: $(basename "$wheel")"
.venv/bin/python - "$wheel" <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
tops = sorted({n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")})
assert tops == ["s3tables_kit"], f"the wheel must claim only s3tables_kit at the top level, not {tops}"
shipped = [n for n in names if n.split("/")[1:2] and n.split("/")[1] in ("emulator", "harness", "bench", "tests")]
assert not shipped, f"the wheel ships the harness: {shipped[:5]}"
for data in ("s3tables_kit/jars/pom.xml", "s3tables_kit/policies/rendered/seed/SUMMARY.md"):
    assert data in names, f"the wheel lacks its data file {data}"
print(f"wheel-check: {len(names)} files, top level {tops}, no stand-in, data files present")
EOF
"$python" -m venv "$out/venv"
"$out/venv/bin/python" -m pip install -q --upgrade pip >/dev/null
echo "wheel-check: installing with the base dependencies only"
"$out/venv/bin/python" -m pip install -q -c constraints.txt "$wheel"
root=$PWD
kit="$root/$out/venv/bin/s3tables-kit"
cd "$out"  # away from the checkout, whose top-level folders would shadow what the wheel installed
for absent in pyspark cdktf jsii moto infra jobs policies topology emulator; do
  if "$root/$out/venv/bin/python" -c "import $absent" 2>/dev/null; then
    echo "wheel-check: '$absent' is importable in the base install" >&2
    exit 1
  fi
done
"$kit" --help >/dev/null
"$kit" status --help >/dev/null
"$kit" explain --help >/dev/null
"$kit" summary --config "$root/examples/seed.toml" > summary.txt
grep -q "^stack replica-" summary.txt
rc=0
"$kit" recover --outputs outputs.json --namespace analytics > recover.txt 2>&1 || rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "needs the \[spark\] extra" recover.txt; then
  echo "wheel-check: recover without Spark should exit 2 naming the [spark] extra; got exit $rc:" >&2
  cat recover.txt >&2
  exit 1
fi
echo "wheel-check: passed (--help, status --help, explain --help, summary; recover names the [spark] extra)"
