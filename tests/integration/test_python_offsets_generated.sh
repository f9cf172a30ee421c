# The committed offset tables are exactly what tools/gen_python_offsets.py
# computes from the installed CPython headers: nobody edited them by hand and
# nobody forgot to regenerate them.
source "$(dirname "$0")/lib.sh"

PYENV_ROOT=${PYENV_ROOT:-$HOME/.pyenv}
if [ ! -d "$PYENV_ROOT/versions" ]; then
  skip_test "no pyenv at $PYENV_ROOT, so no CPython headers to regenerate from"
fi

committed="$STEPSCOPE_REPO/src/collectors/python/offsets_generated.hpp"
python3 "$STEPSCOPE_REPO/tools/gen_python_offsets.py" --pyenv-root "$PYENV_ROOT" \
  --output "$WORK/regenerated.hpp" || fail "the generator failed"
diff -u "$committed" "$WORK/regenerated.hpp" >&2 ||
  fail "src/collectors/python/offsets_generated.hpp differs from the generator's output: run tools/gen_python_offsets.py"
echo "1 passed, 0 failed"
