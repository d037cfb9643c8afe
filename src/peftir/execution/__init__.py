"""Where and how every model of every system runs: one seam for device, precision, threads and batch mechanics.

``seam.Execution`` is built once per job from the config's ``execution`` section and the job's threads; every
model a job trains, encodes, scores or searches with is put on its device by ``Execution.place`` and every batch
reaches it through ``Execution.inputs``, under ``Execution.precision``. ``gradients`` holds the batch mechanics
that let a paper's batch run on one device: gradient accumulation for objectives that decompose over examples,
a gradient cache for contrastive ones (random state replayed on the CPU and the device), gradient clipping.
``audit`` records, when asked, what entered each model and from where: the test that no job goes around the seam.
"""
