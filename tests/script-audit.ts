/**
 * A vitest setup file: every scripted model a test builds (llm/scripted.ts) is audited when the test ends,
 * and the test fails if a scripted turn was left unplayed or a call arrived that the script had no reply for,
 * even when the loop swallowed that call's SCRIPT_EXHAUSTED. A model built outside a test (at module level or
 * in beforeAll) is audited when its file ends. A test about leftovers says so with `tolerate(...)`.
 * No import of llm/: the script finds this array through a global symbol, so the setup loads nothing.
 */
import { afterAll, afterEach, beforeEach } from "vitest";

interface Audited {
  problems(): string[];
}

const AUDIT = Symbol.for("pda.scripted.audit");
const made: Audited[] = [];
(globalThis as { [AUDIT]?: Audited[] })[AUDIT] = made;
const shared: Audited[] = [];

function check(scripts: Audited[], when: string): void {
  const problems = scripts.flatMap((s) => s.problems());
  if (problems.length)
    throw new Error(`the scripted model was not played exactly (${when}):\n${problems.join("\n")}`);
}

beforeEach(() => {
  shared.push(...made.splice(0));
});

afterEach(() => {
  check(made.splice(0), "this test");
});

afterAll(() => {
  check([...shared.splice(0), ...made.splice(0)], "built outside a test");
});
