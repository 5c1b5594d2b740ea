#!/usr/bin/env bash
# `bench --executor ssh:HOST,...` against real OpenSSH: the test starts two
# sshd on 127.0.0.1 with their own host keys, user key, ports and config in
# a temporary folder (ssh and scp read a config of the test's own through
# --ssh-config; nothing under /etc/ssh or ~/.ssh is read or written) and
# stops them on every exit path. Checks: a 2-model run spread over two
# hosts; a host that cannot be reached, one without modelbench and one
# with another version are clear errors; a host that drops mid-run fails
# only its own model; `modelbench script` sends a script's models, each
# manifest's folder self-contained, to the hosts' Python front.
#
# Needs Debian's openssh-server and openssh-client. Without them the test
# is skipped, unless MB_WITH_SLURM=1 (set by `make test`, which installs
# them with Slurm's packages).
set -uo pipefail

: "${MB_CLI:?MB_CLI must name the modelbench binary}"
: "${MB_TEST_MODELS:?MB_TEST_MODELS must name the models folder}"
: "${MB_SOURCE_DIR:?MB_SOURCE_DIR must name the source tree}"

cli=$MB_CLI
python=/usr/bin/python3
models=$MB_TEST_MODELS
sshd=/usr/sbin/sshd

for tool in $sshd ssh scp ssh-keygen; do
  if ! command -v $tool >/dev/null 2>&1; then
    if [ "${MB_WITH_SLURM:-0}" = 1 ]; then
      echo "FAIL: $tool not found but MB_WITH_SLURM=1: install openssh-server" \
        "and openssh-client (MB_WITH_SLURM=1 scripts/install-deps.sh)" >&2
      exit 1
    fi
    echo "SKIP: $tool not found (apt install openssh-server openssh-client," \
      "or run 'make test', which installs them)"
    exit 0
  fi
done

tmp=$(mktemp -d)
chmod 755 "$tmp"
cleanup() {
  local f
  for f in "$tmp"/sshd-*.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck source=tests/shell_lib.sh
. "$MB_SOURCE_DIR/tests/shell_lib.sh"
export MODELBENCH_CACHE_DIR=$tmp/cache

free_port() {
  local p tries
  for ((tries = 0; tries < 200; tries++)); do
    p=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# sshd refuses to start as root without its privilege separation folder,
# which Debian's service creates at boot; a container may lack it.
[ "$(id -u)" != 0 ] || [ -d /run/sshd ] || mkdir -p -m 0755 /run/sshd

ssh-keygen -q -t ed25519 -N '' -f "$tmp/user_key" -C modelbench-test
cp "$tmp/user_key.pub" "$tmp/authorized_keys"
: >"$tmp/known_hosts"
# start_sshd NAME: an sshd of its own on a free port; its port in $port.
start_sshd() {
  port=$(free_port) || return 1
  ssh-keygen -q -t ed25519 -N '' -f "$tmp/host_key_$1"
  cat >"$tmp/sshd_config_$1" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $tmp/host_key_$1
AuthorizedKeysFile $tmp/authorized_keys
PidFile $tmp/sshd-$1.pid
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
StrictModes no
PermitRootLogin prohibit-password
Subsystem sftp internal-sftp
EOF
  "$sshd" -f "$tmp/sshd_config_$1" -E "$tmp/sshd_$1.log" || return 1
  echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$tmp/host_key_$1.pub")" \
    >>"$tmp/known_hosts"
  local i
  for ((i = 0; i < 50; i++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
host_entry() { # NAME PORT
  cat <<EOF
Host $1
  HostName 127.0.0.1
  Port $2
  User $(id -un)
  IdentityFile $tmp/user_key
  IdentitiesOnly yes
  UserKnownHostsFile $tmp/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
EOF
}

# Where sshd cannot run at all (a sandbox without sockets or privilege
# separation) the test says why and skips, unless `make test` asked for it.
sshd_failed() {
  if [ "${MB_WITH_SLURM:-0}" = 1 ]; then
    echo "FAIL: sshd $1 did not start" >&2
    cat "$tmp/sshd_$1.log" >&2
    exit 1
  fi
  echo "SKIP: sshd $1 did not start:"
  cat "$tmp/sshd_$1.log"
  exit 0
}
start_sshd a || sshd_failed a
port_a=$port
start_sshd b || sshd_failed b
port_b=$port
closed=$(free_port)
{
  host_entry hosta "$port_a"
  host_entry hostb "$port_b"
  host_entry nohost "$closed"
} >"$tmp/ssh_config"

quick=(--tier 1 --warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0
  --no-cache --no-record --ssh-config "$tmp/ssh_config")
two=("$models/mlp.onnx" "$models/small_cnn.onnx")

# ---- 1. two models over two hosts ----
run 0 bench "${two[@]}" "${quick[@]}" --executor ssh:hosta,hostb \
  --remote-modelbench "$cli" --json "$tmp/ssh.json"
expect_in "$tmp/err" "2 tasks on ssh:hosta,hostb" "bench --executor ssh"
expect_in "$tmp/out" "2 models benchmarked, 0 failed" "bench --executor ssh"
py "both models ran on the hosts, reported under their own paths" '
import json, os, sys
reports = json.load(open(sys.argv[1]))["reports"]
paths = [os.path.realpath(p) for p in sys.argv[2:]]
assert [r["model"]["path"] for r in reports] == paths, [r["model"]["path"] for r in reports]
for r in reports:
    assert [x["status"] for x in r["results"]] == ["ok", "ok"], r["results"]
' "$tmp/ssh.json" "${two[@]}"

# ---- 2. hosts that cannot be used ----
run 1 bench "$models/mlp.onnx" "${quick[@]}" --executor ssh:hosta,nohost \
  --remote-modelbench "$cli"
expect_in "$tmp/err" "cannot reach host 'nohost'" "a wrong host"
run 1 bench "$models/mlp.onnx" "${quick[@]}" --executor ssh:hosta \
  --remote-modelbench "$tmp/nowhere/modelbench"
expect_in "$tmp/err" "host 'hosta' has no usable modelbench" \
  "a host without modelbench"
printf '#!/bin/sh\necho "modelbench 0.0.0"\n' >"$tmp/old-modelbench"
chmod +x "$tmp/old-modelbench"
run 1 bench "$models/mlp.onnx" "${quick[@]}" --executor ssh:hosta \
  --remote-modelbench "$tmp/old-modelbench"
expect_in "$tmp/err" "runs 'modelbench 0.0.0'" "another modelbench version"

# ---- 3. a host that drops mid-run fails only its models ----
# On host b the remote modelbench kills its own ssh session as it starts
# to benchmark: the connection drops under the submitter.
cat >"$tmp/dropping-modelbench" <<EOF
#!/bin/sh
case "\$SSH_CONNECTION \$1" in
*" $port_b bench") kill -9 \$PPID ;;
esac
exec "$cli" "\$@"
EOF
chmod +x "$tmp/dropping-modelbench"
run 1 bench "${two[@]}" "${quick[@]}" --executor ssh:hosta,hostb \
  --remote-modelbench "$tmp/dropping-modelbench" --json "$tmp/drop.json"
expect_in "$tmp/err" "lost host 'hostb'" "a host that drops"
py "the dropped host failed its model only" '
import json, sys
a, b = json.load(open(sys.argv[1]))["reports"]
assert all(x["status"] == "ok" for x in a["results"]), a["results"]
assert all(x["status"] == "error" and "lost host" in x["error"] for x in b["results"]), b["results"]
' "$tmp/drop.json"

# ---- 4. modelbench script over SSH: a script's models, self-contained ----
# Debian's python cannot load an ASan library; without torch, or onnx (its
# torch.onnx.export needs it for the ORT_CPU row), the section is skipped
# unless MB_WITH_TORCH=1 (make test), where that is a failure.
if [ "${MB_SANITIZE:-OFF}" = ON ]; then
  echo "skipped modelbench script over SSH: sanitizer build"
elif ! py_has torch "modelbench script over SSH" ||
  ! py_has onnx "modelbench script over SSH"; then
  :
else
  cat >"$tmp/demo.py" <<'EOF'
# labels: task::ssh-demo
import torch
from torch import nn

torch.manual_seed(0)
nn.Sequential(nn.Linear(6, 4), nn.ReLU())(torch.randn(2, 6))
nn.Conv2d(3, 2, 3)(torch.randn(1, 3, 6, 6))
EOF
  # The hosts' modelbench is this tree's Python front (a command of words).
  remote="env MODELBENCH_CACHE_DIR=$tmp/remote-cache PYTHONPATH=$MB_SOURCE_DIR/python"
  remote+=" MODELBENCH_LIBRARY=$MB_BUILD_DIR/lib/libmodelbench.so $python -m modelbench"
  run 0 script "$tmp/demo.py" -c EAGER,ORT_CPU --warmup 1 --warmup-time 0 \
    --min-iterations 3 --min-time 0 --no-record --ssh-config "$tmp/ssh_config" \
    --executor ssh:hosta,hostb --remote-modelbench "$remote" \
    --json "$tmp/script.json" --keep-run-dir
  expect_in "$tmp/err" "2 tasks on ssh:hosta,hostb" "modelbench script --executor ssh"
  py "the script's two models ran on the hosts, with their labels" '
import json, sys
reports = json.load(open(sys.argv[1]))["reports"]
assert [r["model"]["name"] for r in reports] == ["Sequential", "Conv2d"], reports
for r in reports:
    assert [x["status"] for x in r["results"]] == ["ok", "ok"], r["results"]
    assert r["labels"]["task"] == "ssh-demo", r["labels"]
' "$tmp/script.json"
  # What went to the hosts is the manifest's folder alone: every file it
  # names is inside it (the ONNX export copied out of the build cache).
  kept=$(sed -n 's/^run folder kept: //p' "$tmp/out")
  py "the manifests sent over SSH name only files of their own folder" '
import glob, json, os, sys
manifests = glob.glob(os.path.join(sys.argv[1], "*", "*", "manifest.json"))
assert len(manifests) == 2, manifests
for path in manifests:
    m = json.load(open(path))
    assert set(m["formats"]) == {"pytorch", "onnx"}, m["formats"]
    for entry in m["formats"].values():
        assert not os.path.isabs(entry["path"]), entry
        assert os.path.isfile(os.path.join(os.path.dirname(path), entry["path"])), entry
' "$kept"
  rm -rf "$kept"
fi

# ---- 5. hostile names: hosts, model paths, logs, the control socket ----
# A host is validated by modelbench itself, before any ssh runs: an option
# in disguise, shell words, blanks and ports are usage errors naming it.
bad_hosts=("-oProxyCommand=touch $tmp/PROXIED" "hosta;touch $tmp/PROXIED"
  'host a' 'hosta:2222' '[::1]' "$(printf 'host\tb')")
bad_needles=("starts with '-'" "';' is not allowed" "a space is not allowed"
  "a port or an IPv6 address" "a port or an IPv6 address"
  "byte 0x09 is not allowed")
for i in "${!bad_hosts[@]}"; do
  usage_error "${bad_needles[$i]}" bench "$models/mlp.onnx" "${quick[@]}" \
    --executor "ssh:hosta,${bad_hosts[$i]}" --remote-modelbench "$cli"
done
expect_in "$tmp/err" "ssh host 'host\\x09b'" "a host's control bytes escaped"
checks=$((checks + 1))
[ ! -e "$tmp/PROXIED" ] || fail "a hostile host name ran its command"

# A model whose folder, file and external data names hold quotes, blanks
# and $(...): it arrives intact (the remote bench loads it), nothing runs
# on either side, and every command line of ssh.log, pasted into a shell,
# runs nothing and gives back the argv that was run. ssh and scp are
# wrapped to record their argv and where the master's socket lies.
marker=PASTED-$$
hostile_dir="$tmp/a \$(touch $marker) dir"
hostile="$hostile_dir/m'\$(touch $marker)' x.onnx"
mkdir -p "$hostile_dir/sub dir" "$tmp/bin" "$tmp/argv" "$tmp/paste"
if "$python" -c 'import onnx' 2>/dev/null; then
  "$python" - "$models/mlp.onnx" "$hostile" "sub dir/w'\$(touch $marker)'.bin" <<'EOF2'
import sys
import onnx
from onnx.external_data_helper import convert_model_to_external_data
m = onnx.load(sys.argv[1])
convert_model_to_external_data(m, all_tensors_to_one_file=True,
                               location=sys.argv[3], size_threshold=0)
onnx.save(m, sys.argv[2])
EOF2
else
  echo "external data not checked over SSH: $python lacks onnx"
  cp "$models/mlp.onnx" "$hostile"
fi
for tool in ssh scp; do
  cat >"$tmp/bin/$tool" <<EOF2
#!/bin/sh
printf '%s\\0' "$tool" "\$@" >"\$(mktemp "$tmp/argv/XXXXXX")"
for a in "\$@"; do
  case \$a in ControlPath=*)
    d=\$(dirname "\${a#ControlPath=}")
    stat -c '%a %u %n' "\$d" >>"$tmp/control-dirs" ;;
  esac
done
exec $(command -v $tool) "\$@"
EOF2
  chmod +x "$tmp/bin/$tool"
done
printf '#!/bin/sh\nprintf "%%s\\0" "$@"\n' >"$tmp/bin/printargs"
chmod +x "$tmp/bin/printargs"
PATH="$tmp/bin:$PATH" run 0 bench "$hostile" "${quick[@]}" \
  --executor "ssh:$(id -un)@hosta" --remote-modelbench "$cli" \
  --json "$tmp/hostile.json"
py "the hostile model ran on the host under its own path" '
import json, os, sys
r = json.load(open(sys.argv[1]))  # one model: the report itself
assert r["model"]["path"] == os.path.realpath(sys.argv[2]), r["model"]["path"]
assert [x["status"] for x in r["results"]] == ["ok", "ok"], r["results"]
' "$tmp/hostile.json" "$hostile"
run_dir=$(sed -n 's/.*; folder //p' "$tmp/err")
checks=$((checks + 1))
if [ ! -s "$run_dir/tasks/0/ssh.log" ]; then
  fail "no ssh.log in the run folder '$run_dir'"
else
  # Each logged command, pasted after printargs into sh -c, in a folder of
  # its own: the words it gives back must be those of a recorded call.
  n_lines=0
  while IFS= read -r line; do
    n_lines=$((n_lines + 1))
    (cd "$tmp/paste" && sh -c "$tmp/bin/printargs ${line#\$ }") >"$tmp/pasted"
    found=0
    for rec in "$tmp"/argv/*; do
      cmp -s "$rec" "$tmp/pasted" && found=1
    done
    checks=$((checks + 1))
    [ "$found" = 1 ] || fail "pasting ssh.log's line gave other words: $line"
  done < <(grep '^\$ ' "$run_dir/tasks/0/ssh.log")
  checks=$((checks + 1))
  [ "$n_lines" -ge 5 ] || fail "ssh.log holds $n_lines commands, expected 5+"
fi
checks=$((checks + 1))
if [ -e "$tmp/paste/$marker" ] || [ -e "$HOME/$marker" ] ||
  [ -e "$hostile_dir/$marker" ]; then
  fail "a \$(touch $marker) in a model's name ran"
fi
# The master's socket lies in a folder of our own (0700, ours), not at a
# name in /tmp that another user could take first, and is gone after.
checks=$((checks + 1))
if [ ! -s "$tmp/control-dirs" ]; then
  fail "no ssh call named a ControlPath (no master connection?)"
elif grep -qv "^700 $(id -u) " "$tmp/control-dirs"; then
  fail "the control socket's folder is not private:"
  sort -u "$tmp/control-dirs" | show
else
  for d in $(cut -d' ' -f3- "$tmp/control-dirs" | sort -u); do
    [ ! -e "$d" ] || fail "the control socket's folder $d was left behind"
  done
fi

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
