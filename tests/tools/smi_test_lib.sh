# Shared by the mtia-smi test scripts (sourced after `smi` is set): a work
# folder, processes and files removed at exit, and the two checks of the
# output contract.
#   pids+=("$pid")      killed (SIGKILL) at exit
#   leftovers+=(PATH)   removed at exit
#   run NAME args...    mtia-smi must exit 0 with nothing on stderr; stdout goes to $work/NAME
#   expect CODE TEXT args...  mtia-smi must exit CODE, print nothing on stdout, TEXT on stderr
work=$(mktemp -d)
pids=()
leftovers=()
_smi_test_cleanup() {
  local p
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work" "${leftovers[@]}"
}
trap _smi_test_cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

run() {
  local name=$1
  shift
  "$smi" "$@" >"$work/$name" 2>"$work/$name.err" || fail "mtia-smi $*: exit $? ($(cat "$work/$name.err"))"
  [[ ! -s $work/$name.err ]] || fail "mtia-smi $*: wrote to stderr: $(cat "$work/$name.err")"
}

expect() {
  local code=$1 text=$2
  shift 2
  local got=0
  "$smi" "$@" >"$work/out" 2>"$work/err" || got=$?
  [[ $got == "$code" ]] || fail "mtia-smi $*: exit $got, expected $code (stderr: $(cat "$work/err"))"
  [[ ! -s $work/out ]] || fail "mtia-smi $*: wrote to stdout: $(cat "$work/out")"
  grep -qF -- "$text" "$work/err" || fail "mtia-smi $*: stderr lacks '$text': $(cat "$work/err")"
}
