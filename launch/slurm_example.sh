#!/usr/bin/env bash
# Example: jaxlab over several GPU hosts with SLURM (one process per host, all its GPUs).
#
#   sbatch launch/slurm_example.sh lm_pretrain     # base-model pretraining, FSDP over 2 x 8 GPUs
#   sbatch launch/slurm_example.sh latent_pager    # the pager on Qwen3-1.7B (a local HF folder)
#   sbatch --nodes=4 launch/slurm_example.sh org_forms
#
# jax.distributed.initialize() reads the SLURM environment, so --distributed needs no other flags;
# every process runs the same command. Training configs lay all GPUs of all hosts out as their
# `mesh` block (data, fsdp, tensor; lm_pretrain:gpu puts them all on fsdp); sweeps shard their runs
# axis over them. The workdir must be on a filesystem every host sees: every process writes its
# shards of each Orbax checkpoint, and the same command resumes after a preemption (SIGTERM saves).
#SBATCH --job-name=jaxlab
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --time=04:00:00
#SBATCH --signal=TERM@120
set -euo pipefail
SHARED=${SHARED:-/shared/jaxlab}
case "${1:-lm_pretrain}" in
  lm_pretrain)
    srun jaxlab run configs/lm_pretrain.py:gpu --workdir "$SHARED/lm_pretrain" --distributed ;;
  latent_pager)
    srun jaxlab run configs/latent_pager.py:qwen3_1p7b --workdir "$SHARED/latent_pager" \
      --config.model.path="$SHARED/models/Qwen3-1.7B" --distributed ;;
  org_forms)
    srun jaxlab run configs/org_forms.py:repro --workdir "$SHARED/org_forms" \
      --config.seeds=300 --config.block=0 --distributed ;;
  *)
    echo "usage: sbatch launch/slurm_example.sh {lm_pretrain|latent_pager|org_forms}" >&2; exit 2 ;;
esac
