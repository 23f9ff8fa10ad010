"""The capacity planner and serving simulator (docs/planner.md).

    ServingConfig / resolve          inferctl.plan.config    one way to serve a model, vLLM's defaults filled in
    plan_memory(cfg) -> MemoryPlan   inferctl.plan.memory    fits?, weights, reserve, KV memory and layout
    kv_layout(model, ...)            inferctl.plan.kvcache   vLLM's hybrid KV sizing: groups, blocks, concurrency
    StepModel, PerfParams            inferctl.plan.perf      roofline step time, speculative decoding
    Scheduler, SimRequest            inferctl.plan.scheduler continuous batching with chunked prefill, preemption
    SimEngine, simulate_cell         inferctl.plan.cells     a sweep cell simulated into the bench's records/metrics
    fit, score, load_params          inferctl.plan.calibrate fit PerfParams to a measured run, per-cell error
    provenance(resolved, ...)        inferctl.plan.provenance which speed parameters / config reader, error band

Use cases live in inferctl.ops.plan / .simulate / .calibrate; the HTTP simulator in inferctl.sim.
"""
