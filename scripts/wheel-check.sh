#!/usr/bin/env bash
# `make wheel-check`: the kit as a platform engineer installs it. Builds the wheel, installs it into a fresh virtual
# environment with the base dependencies only (no Spark, no jsii, no CDKTF bindings), and runs the command there:
# --help, --version, status --help, a summary of the seed; a command that needs an extra says which in one line
# (exit 2); the wheel holds no stand-in, claims no generic top-level module names and carries its license. Then with
# the [spark] extra, away from the checkout: a missing jar is one line naming `s3tables-kit fetch-jars` (exit 2), and a
# local recovery of a small table runs with the pinned jars fetched on first use (SHA-256 checked) from a Maven
# repository on 127.0.0.1 serving the checkout's .jars/ (no network), read back by pyiceberg (scripts/wheel_check.py).
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
for data in ("s3tables_kit/jars/pom.xml", "s3tables_kit/jars/pinned-jars.sha256",
             "s3tables_kit/policies/rendered/seed/SUMMARY.md"):
    assert data in names, f"the wheel lacks its data file {data}"
meta = zipfile.ZipFile(sys.argv[1]).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
assert "License-Expression: Apache-2.0" in meta and "License-File: LICENSE" in meta, "no license metadata"
assert "Description-Content-Type: text/markdown" in meta and "pip install" in meta, "no README as long description"
assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "the wheel lacks the LICENSE file"
print(f"wheel-check: {len(names)} files, top level {tops}, no stand-in, data files and license present")
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
"$kit" --version | grep -qx "s3tables-kit $(basename "$wheel" | cut -d- -f2)"
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

echo "wheel-check: the base install checked ($SECONDS s)"
echo "wheel-check: installing the [spark] extra"
"$root/$out/venv/bin/python" -m pip install -q -c "$root/constraints.txt" "$root/$wheel[spark]"
# A Maven repository on 127.0.0.1: the checkout's jars (which make setup checked against the pins) at their paths.
while read -r sum path; do
  case "$sum" in '' | '#'*) continue ;; esac
  mkdir -p "maven/$(dirname "$path")"
  ln -s "$root/.jars/$(basename "$path")" "maven/$path"
done < "$root/jars/pinned-jars.sha256"
"$root/.venv/bin/python" "$root/scripts/wheel_check.py" serve maven port &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s port ] && break; sleep 0.1; done
repository="http://127.0.0.1:$(cat port)/"
export KIT_JARS_CACHE="$PWD/jars-cache"
mkdir -p drill/warehouses/replica/analytics/orders
rc=0
KIT_MAVEN_REPOSITORY="${repository}nothing/" "$kit" rehearse --local --out drill > missing.txt 2>&1 || rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "run \`s3tables-kit fetch-jars\`" missing.txt || [ "$(grep -vc '^fetching ' missing.txt)" -ne 2 ]; then
  echo "wheel-check: a missing jar should be one line naming s3tables-kit fetch-jars, exit 2; got exit $rc:" >&2
  cat missing.txt >&2
  exit 1
fi
export KIT_SPARK_JAVA_OPTIONS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # as the tests: less JIT CPU for a short JVM
KIT_MAVEN_REPOSITORY="$repository" "$root/$out/venv/bin/python" "$root/scripts/wheel_check.py" recover "$PWD/recovery"
"$kit" fetch-jars --repository "${repository}nothing/" > fetched.txt  # every jar present and checked: none fetched
grep -q "^6 pinned jars in $KIT_JARS_CACHE, SHA-256 checked" fetched.txt
echo "wheel-check: passed in $SECONDS s (--help, --version, status --help, explain --help, summary; recover names the [spark] extra;"
echo "  with [spark]: a missing jar is one line naming fetch-jars, the jars fetched on first use, a local recovery)"
