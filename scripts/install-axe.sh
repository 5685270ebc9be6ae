#!/bin/sh
# axe-core, the accessibility checker that tests/learn/test_lab_browser.py runs inside the lab's
# pages, from the npm registry. `make test` runs this, as it runs install-browser.sh for Chromium.
# It goes to .venv/axe-core/ ($MINIGRAD_AXE_DIR): a test tool only, never committed (.venv is
# ignored) and never served (the lab serves its three files in minigrad/learn/lab/static/ alone).
# With npm: `npm install axe-core`. Without: the same package fetched from the registry, checked
# against the registry's sha512, unpacked. If neither works it says so; the accessibility tests then
# skip, or fail under CI=true.
VERSION=4.14.1
DEST=${MINIGRAD_AXE_DIR:-.venv/axe-core}
PACKAGE="$DEST/node_modules/axe-core"
if [ -f "$PACKAGE/axe.min.js" ] && grep -q "\"version\": \"$VERSION\"" "$PACKAGE/package.json" 2>/dev/null; then
    exit 0
fi
echo "installing axe-core $VERSION for the lab's browser tests into $DEST ..."
mkdir -p "$DEST"
if command -v npm >/dev/null 2>&1; then
    if npm install --prefix "$DEST" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
        "axe-core@$VERSION" >/dev/null; then
        exit 0
    fi
    echo "note: npm install axe-core@$VERSION failed; fetching it from the registry directly"
fi
PYTHON=.venv/bin/python
[ -x "$PYTHON" ] || PYTHON=python3
"$PYTHON" - "$VERSION" "$PACKAGE" <<'EOF'
import base64, hashlib, io, json, sys, tarfile, urllib.request
from pathlib import Path

version, package = sys.argv[1], Path(sys.argv[2])
try:
    with urllib.request.urlopen(f"https://registry.npmjs.org/axe-core/{version}", timeout=60) as answer:
        dist = json.load(answer)["dist"]
    with urllib.request.urlopen(dist["tarball"], timeout=120) as answer:
        data = answer.read()
except OSError as err:
    sys.exit(f"note: could not reach the npm registry ({err}); the accessibility tests will skip "
             "(or fail under CI)")
algorithm, _, expected = dist["integrity"].partition("-")
if algorithm != "sha512" or base64.b64encode(hashlib.sha512(data).digest()).decode() != expected:
    sys.exit("axe-core: the download does not match the registry's sha512; nothing installed")
with tarfile.open(fileobj=io.BytesIO(data)) as archive:
    package.mkdir(parents=True, exist_ok=True)
    for name in ("axe.min.js", "package.json", "LICENSE"):
        (package / name).write_bytes(archive.extractfile(f"package/{name}").read())
EOF
