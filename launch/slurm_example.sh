#!/usr/bin/env bash
# Example: one jaxlab sweep over several GPU hosts with SLURM (one process per host, all its GPUs).
# jax.distributed.initialize() reads the SLURM environment, so --distributed needs no other flags;
# every process runs the same command, the runs axis is sharded over all GPUs of all hosts, and
# process 0 writes the results. The workdir must be on a filesystem every host sees (checkpoints).
#SBATCH --job-name=jaxlab
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --time=01:00:00
set -euo pipefail
srun jaxlab run configs/org_forms.py:repro --workdir /shared/jaxlab/org_forms \
  --config.seeds=300 --config.block=0 --distributed
