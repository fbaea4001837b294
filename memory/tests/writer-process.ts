/**
 * A separate writer process for the concurrency and crash tests (run from dist/):
 *   node writer-process.js <db> <sessions> <steps> <startAtMs> [stepDelayMs]
 * Waits until startAtMs so all writers contend at once, writes sessions through SessionStore, prints
 * "STEP <session> <index>" after each completed step is committed and "DONE <session>" after each finish.
 * With stepDelayMs it pauses after every step (the crash test kills it meanwhile).
 */
import { SessionStore } from "../index.js";
import { simulateSession } from "./simulate.js";

const [db, sessionsArg, stepsArg, startAtArg, delayArg] = process.argv.slice(2);
if (!db || !sessionsArg || !stepsArg || !startAtArg) {
  process.stderr.write("usage: writer-process <db> <sessions> <steps> <startAtMs> [stepDelayMs]\n");
  process.exit(2);
}
const delay = Number(delayArg ?? 0);
const pause = new Int32Array(new SharedArrayBuffer(4));
const sleep = (ms: number) => ms > 0 && Atomics.wait(pause, 0, 0, ms);

sleep(Number(startAtArg) - Date.now());
const store = SessionStore.open(db);
for (let n = 0; n < Number(sessionsArg); n++) {
  const id = `w${process.pid}-${n}`;
  simulateSession(store, {
    id,
    query: `writer ${process.pid} session ${n}: what is 32 + 5 - 3 * 2`,
    steps: Number(stepsArg),
    replanAfter: [1],
    failingTools: [0],
    afterStep: (i) => {
      process.stdout.write(`STEP ${id} ${i}\n`);
      sleep(delay);
    },
  });
  process.stdout.write(`DONE ${id}\n`);
}
store.close();
