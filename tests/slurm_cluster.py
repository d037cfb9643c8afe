"""A real single-node SLURM for tests: Debian's slurm-wlm and munge, started by hand (no systemd).

The node has the machine's CPUs, a `cpu` partition (default) and a `gpu` partition whose two
GPUs are character devices made with mknod, so GPU requests schedule although CUDA sees none.
Completed jobs are written by SLURM's own job-completion plugin (jobcomp/filetxt) to a file the
tests read; without slurmdbd it cannot track GPUs, so the GPUs a job was given are read from
slurmctld's job records (kept for an hour). Only daemons this module started are stopped, by PID.
"""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("slurm-wlm", "munge")
MUNGE_SOCKET = Path("/run/munge/munge.socket.2")
# The default location: snakemake's job steps call srun with every SLURM_* variable removed, SLURM_CONF
# included, so the configuration must be where srun looks without being told.
SYSTEM_CONF = Path("/etc/slurm")
CLUSTER_NAME = "peftir-test"    # the first line of every configuration this module writes


def install() -> None:
    """apt-get install slurm-wlm and munge unless present (as root; a few seconds from the registry)."""
    if shutil.which("slurmctld") and shutil.which("munged"):
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]
    if subprocess.run(command, env=env, capture_output=True, timeout=600).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, check=True, capture_output=True, timeout=600)
        subprocess.run(command, env=env, check=True, capture_output=True, timeout=600)


def _munge_works() -> bool:
    if not MUNGE_SOCKET.exists():
        return False
    encoded = subprocess.run(["munge", "-n"], capture_output=True, timeout=10)
    return encoded.returncode == 0 and subprocess.run(["unmunge"], input=encoded.stdout, capture_output=True,
                                                      timeout=10).returncode == 0


def _stale(conf: Path) -> bool:
    """Whether ``conf`` is one a test cluster wrote and left behind: its cluster name is this module's and no
    slurmctld runs. A test run killed before its teardown (a CI timeout, a SIGKILL) leaves it; the next run
    replaces it rather than refusing to start. A configuration of any other cluster is never touched."""
    named = conf.read_text().splitlines()[:1] == [f"ClusterName={CLUSTER_NAME}"]
    running = subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True).returncode == 0
    return named and not running


def _wait(predicate, what: str, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")


@dataclass
class Cluster:
    root: Path
    hostname: str = field(default_factory=socket.gethostname)
    processes: list[subprocess.Popen] = field(default_factory=list)
    wrote_config: bool = False

    @property
    def conf(self) -> Path:
        return SYSTEM_CONF / "slurm.conf"

    @property
    def jobcomp(self) -> Path:
        return self.root / "jobcomp.log"

    @property
    def env(self) -> dict[str, str]:
        """Environment for SLURM clients (sbatch, squeue, and Snakemake calling them)."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def _write_config(self) -> None:
        if self.conf.exists() and not _stale(self.conf):
            raise RuntimeError(f"{self.conf} exists: this machine has a SLURM configuration the test will not replace")
        SYSTEM_CONF.mkdir(parents=True, exist_ok=True)
        self.wrote_config = True
        for name in ("state", "spool"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        gpus = [self.root / f"gpu{i}" for i in range(2)]
        for device in gpus:
            if not device.exists():
                os.mknod(device, 0o666 | 0o020000, os.makedev(1, 3))   # character device, like /dev/null
        memory = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20) - 1000
        cpus = os.cpu_count() or 1
        self.conf.write_text(f"""ClusterName={CLUSTER_NAME}
SlurmctldHost={self.hostname}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={self.root}/state
SlurmdSpoolDir={self.root}/spool
SlurmctldPidFile={self.root}/slurmctld.pid
SlurmdPidFile={self.root}/slurmd.pid
SlurmctldLogFile={self.root}/slurmctld.log
SlurmdLogFile={self.root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
MinJobAge=3600
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={self.jobcomp}
GresTypes=gpu
NodeName={self.hostname} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} Gres=gpu:2 State=UNKNOWN
PartitionName=cpu Nodes={self.hostname} Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes={self.hostname} MaxTime=INFINITE State=UP
""")
        (SYSTEM_CONF / "gres.conf").write_text("AutoDetect=off\n" + "".join(f"Name=gpu File={d}\n" for d in gpus))

    def _start_munge(self) -> None:
        if _munge_works():
            return   # a running munged (not ours, so not ours to stop)
        munge = pwd.getpwnam("munge")
        for directory in (MUNGE_SOCKET.parent, Path("/var/lib/munge"), Path("/var/log/munge")):
            directory.mkdir(parents=True, exist_ok=True)
            os.chown(directory, munge.pw_uid, munge.pw_gid)
        key = Path("/etc/munge/munge.key")
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            os.chown(key, munge.pw_uid, munge.pw_gid)
            key.chmod(0o400)
        self._spawn(["munged", "--foreground", "--force"], user=munge.pw_uid, group=munge.pw_gid)
        _wait(_munge_works, "munged")

    def _spawn(self, command: list[str], **kwargs) -> None:
        log = open(self.root / f"{Path(command[0]).name}.out", "ab")
        self.processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, env=self.env, **kwargs))

    def node_state(self) -> str:
        done = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=self.env,
                              timeout=30)
        return done.stdout.strip()

    def start(self) -> "Cluster":
        try:
            self._write_config()
            self._start_munge()
            self._spawn(["slurmctld", "-D", "-i", "-f", str(self.conf)])
            self._spawn(["slurmd", "-D", "-f", str(self.conf)])
            _wait(lambda: self.node_state().startswith("idle"), f"the node to be idle (see {self.root}/*.log)",
                  timeout=90)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Cancel what is left, stop the daemons this cluster started (newest first, by PID), and remove
        the configuration it wrote."""
        if self.processes:
            subprocess.run(["scancel", "--full", "--user", "root"], env=self.env, capture_output=True, timeout=30)
        for process in reversed(self.processes):
            if process.poll() is None:
                os.kill(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.kill(process.pid, signal.SIGKILL)
                    process.wait()
        self.processes.clear()
        if self.wrote_config:
            for name in ("slurm.conf", "gres.conf"):
                (SYSTEM_CONF / name).unlink(missing_ok=True)
            self.wrote_config = False

    def job(self, job_id: str) -> dict[str, str]:
        """slurmctld's record of a job (``scontrol show job``), e.g. its ``TresPerJob``."""
        done = subprocess.run(["scontrol", "show", "job", "--oneliner", job_id], capture_output=True, text=True,
                              env=self.env, timeout=30)
        return dict(item.split("=", 1) for item in done.stdout.split() if "=" in item)

    def completed_jobs(self) -> dict[str, dict[str, str]]:
        """SLURM's job-completion records (jobcomp/filetxt): job id → its fields."""
        jobs = {}
        for line in self.jobcomp.read_text().splitlines() if self.jobcomp.exists() else []:
            fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
            jobs[fields["JobId"]] = fields
        return jobs


def run_bounded(command: list[str], cwd: Path, env: dict, timeout: float) -> tuple[int, str, float, bool]:
    """Run with a hard limit (SIGINT to the process group, SIGKILL 60 s later): status, output, seconds, timed out."""
    started = time.monotonic()
    timed_out = False
    with subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True) as process:
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(process.pid, signal.SIGINT)
            try:
                output, _ = process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                output, _ = process.communicate()
    return process.returncode, output, time.monotonic() - started, timed_out
