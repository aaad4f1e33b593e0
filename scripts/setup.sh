#!/usr/bin/env bash
# Fresh-machine setup: Python venv with pinned packages, npm packages from the lockfile, Iceberg jars via Maven.
# Idempotent: each part is skipped when its stamp is newer than its inputs (make does the same check).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
part=${1:-all}

venv() {
  if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$PY" -m venv .venv
  fi
  echo "setup: installing Python packages (pinned by constraints.txt)"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -c constraints.txt -e '.[spark,infra,standin,test]'
  touch .venv/.stamp
}

# The Node versions the pinned jsii supports; on others it prints an end-of-life banner on every direct command.
SUPPORTED_NODE="22 24"
node_check() {
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  case " $SUPPORTED_NODE " in
    *" $major "*) ;;
    *) echo "setup: Node.js $(node --version) is not one the pinned jsii supports (22 or 24): make targets work and" \
         "silence its warning, direct npx cdktf / python -m s3tables_kit.infra commands print it; install Node 22 or 24" >&2 ;;
  esac
}

npm_pkgs() {
  command -v npm >/dev/null || { echo "setup: npm is required (Node.js 22 or 24)" >&2; exit 1; }
  node_check
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  touch node_modules/.stamp
}

jars() {
  command -v mvn >/dev/null || { echo "setup: Maven (mvn) is required to fetch the Iceberg jars" >&2; exit 1; }
  echo "setup: fetching pinned jars from Maven Central into .jars/"
  rm -rf .jars.tmp
  mvn -q -B -f jars/pom.xml dependency:copy-dependencies -DoutputDirectory="$PWD/.jars.tmp" -DincludeScope=runtime
  # the same SHA-256 an installed kit checks when it fetches them (jars/pinned-jars.sha256, by file name here)
  awk '!/^#/ && NF { n = split($2, p, "/"); print $1 "  " p[n] }' jars/pinned-jars.sha256 \
    | (cd .jars.tmp && sha256sum --check --quiet --strict -)
  rm -rf .jars && mv .jars.tmp .jars
  touch .jars/.stamp
}

case "$part" in
  venv) venv ;;
  npm) npm_pkgs ;;
  jars) jars ;;
  all) venv; npm_pkgs; jars ;;
  *) echo "usage: $0 [venv|npm|jars|all]" >&2; exit 2 ;;
esac
