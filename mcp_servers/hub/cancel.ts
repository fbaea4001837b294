/**
 * Calls in flight, by the caller's AbortSignal. A caller may share one signal among many calls (the sandbox
 * gives all calls of a step one); each signal gets a single abort listener here, however many calls use it,
 * and a call that ends simply leaves the set. Handing such a signal to the MCP SDK instead would add a
 * listener per call that is never removed, and aborting it would cancel every call it ever carried.
 */
export class CallCancels {
  private readonly bySignal = new WeakMap<AbortSignal, Set<(reason: unknown) => void>>();

  /** Run `cancel` if `signal` aborts before the returned function is called (call it when the call ends). */
  watch(signal: AbortSignal, cancel: (reason: unknown) => void): () => void {
    const calls = this.bySignal.get(signal) ?? this.listen(signal);
    calls.add(cancel);
    return () => calls.delete(cancel);
  }

  private listen(signal: AbortSignal): Set<(reason: unknown) => void> {
    const calls = new Set<(reason: unknown) => void>();
    const onAbort = () => {
      for (const cancel of [...calls]) cancel(signal.reason);
      calls.clear();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    this.bySignal.set(signal, calls);
    return calls;
  }
}
