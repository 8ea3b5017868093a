#!/usr/bin/env bash
# Installs the peer of `cargo bench --bench data`: Apache Spark 4.3 as pyspark ships it, into
# target/bench-venv of the repository. Needs python3 (with venv) and Java 17 on the PATH.
# Idempotent: an existing environment with pyspark 4.3 is kept.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/target/bench-venv"
version="${PYSPARK_VERSION:-4.3.0}"
if ! command -v java >/dev/null; then
    echo "setup.sh: java is not on the PATH (Spark 4.3 needs Java 17 or later)" >&2
    exit 1
fi
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import pyspark, sys; sys.exit(pyspark.__version__ != '$version')" 2>/dev/null; then
    echo "pyspark $version is already in $venv"
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet "pyspark==$version"
"$venv/bin/python" -c "import pyspark; print('pyspark', pyspark.__version__, 'in $venv')"
