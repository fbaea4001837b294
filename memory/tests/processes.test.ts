/**
 * Real processes against one SQLite file: many concurrent writers, and a writer killed mid-session.
 * The writers run dist/memory/tests/writer-process.js, so build first (npm test does).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { distPath } from "../../core/index.js";
import { SessionStore } from "../index.js";
import { processStartTime } from "../liveness.js";
import { simulateSession } from "./simulate.js";

const WRITER = distPath("memory/tests/writer-process.js");

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function writer(args: (string | number)[]): { child: ChildProcess; done: Promise<Finished> } {
  const child = spawn(process.execPath, [WRITER, ...args.map(String)], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const done = new Promise<Finished>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`writer ${child.pid} did not finish in 90 s; stderr: ${stderr}`));
    }, 90_000);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, done };
}

let dir: string;
const children: ChildProcess[] = [];
beforeAll(() => {
  if (!existsSync(WRITER)) throw new Error(`${WRITER} is missing: build first (npx tsc -p tsconfig.json)`);
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-procs-"));
});
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("separate processes on one store", () => {
  it("16 concurrent writers finish with no SQLITE_BUSY and an intact database", async () => {
    const db = join(dir, "shared", "pda.db"); // not created yet: the writers race to create and migrate it
    const WRITERS = 16;
    const SESSIONS = 3;
    const STEPS = 4;
    const startAt = Date.now() + 1500; // every writer starts writing at the same moment
    const runs = Array.from({ length: WRITERS }, () => writer([db, SESSIONS, STEPS, startAt]));
    children.push(...runs.map((r) => r.child));
    const results = await Promise.all(runs.map((r) => r.done));
    for (const r of results) {
      expect(r.stderr).not.toMatch(/SQLITE_BUSY|database is locked/);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout.match(/^DONE /gm)).toHaveLength(SESSIONS);
    }

    const store = SessionStore.open(db);
    try {
      expect(store.db.pragma("integrity_check", { simple: true })).toBe("ok");
      expect(store.db.pragma("foreign_key_check")).toEqual([]);
      const sessions = store.listSessions({ limit: 1000 });
      expect(sessions).toHaveLength(WRITERS * SESSIONS);
      expect(new Set(sessions.map((s) => s.status))).toEqual(new Set(["succeeded"]));
      for (const s of sessions) {
        const full = store.getSession(s.session_id);
        expect(full.steps.map((x) => x.status)).toEqual(Array(STEPS).fill("completed"));
        expect(full.plan_versions).toHaveLength(2);
      }
      expect(store.toolCalls({ limit: 100_000 })).toHaveLength(WRITERS * SESSIONS * STEPS * 2);
      // The writers really overlapped: at some moment several of them had a session open.
      const spans = new Map<string, [number, number]>();
      for (const s of sessions) {
        const pid = s.session_id.split("-")[0]!;
        const [a, b] = spans.get(pid) ?? [Infinity, -Infinity];
        spans.set(pid, [Math.min(a, Date.parse(s.created_at)), Math.max(b, Date.parse(s.finished_at!))]);
      }
      const overlap = Math.max(
        ...[...spans.values()].map(([a]) => [...spans.values()].filter(([x, y]) => x <= a && a <= y).length),
      );
      expect(overlap).toBeGreaterThanOrEqual(2);
      expect(
        store.searchMemory("writer session 32 5 3 2", { limit: 100, threshold: 0.3 }).length,
      ).toBeGreaterThan(0);
    } finally {
      store.close();
    }
  });

  it("a writer killed with SIGKILL mid-session leaves a store that opens, with the session interrupted", async () => {
    const db = join(dir, "crash.db");
    const run = writer([db, 1, 5000, 0, 1]);
    children.push(run.child);
    // Kill it once it has reported six committed steps; it keeps writing, so the kill lands mid-session.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("writer reported no steps in 60 s")), 60_000);
      let seen = "";
      run.child.stdout!.on("data", (d) => {
        seen += d;
        if ((seen.match(/^STEP /gm) ?? []).length >= 6) {
          clearTimeout(timer);
          run.child.kill("SIGKILL");
          resolve();
        }
      });
    });
    const end = await run.done;
    expect(end.signal).toBe("SIGKILL");
    const reported = [...end.stdout.matchAll(/^STEP (\S+) (\d+)$/gm)].map((m) => ({
      id: m[1]!,
      index: Number(m[2]),
    }));
    expect(reported.length).toBeGreaterThanOrEqual(6);
    const id = reported[0]!.id;

    const store = SessionStore.open(db);
    try {
      expect(store.db.pragma("integrity_check", { simple: true })).toBe("ok");
      const [listed] = store.listSessions();
      expect(listed).toMatchObject({ session_id: id, status: "interrupted" });
      const session = store.getSession(id);
      expect(session.status_reason).toMatch(/^interrupted: its process \(pid \d+\) ended/);
      // Every step the writer reported as committed is there, complete with its result and perception.
      for (const { index } of reported) {
        const step = session.steps[index]!;
        expect(step.status).toBe("completed");
        expect(step.execution_result?.ok).toBe(true);
        expect(step.perception).toBeDefined();
      }
      expect(store.timeline(id).session.status).toBe("interrupted");
    } finally {
      store.close();
    }
  });

  it("a session whose pid now belongs to another process (pid reuse) is interrupted, not running", () => {
    const store = SessionStore.open(join(dir, "reuse.db"));
    try {
      simulateSession(store, { id: "mine", query: "still mine", steps: 1, noFinish: true });
      const row = () => store.db.prepare("SELECT owner_pid, owner_started FROM sessions WHERE id = 'mine'");
      // Written by this live process, with its start time: running.
      expect(row().get()).toEqual({ owner_pid: process.pid, owner_started: processStartTime(process.pid) });
      expect(store.displayStatus("mine")).toBe("running");
      expect(() => store.claimInterrupted("mine")).toThrow(/session mine is running \(pid \d+ on /);
      // The same pid with another start time: the owner died and its pid went to this process.
      store.db.prepare("UPDATE sessions SET owner_started = '1' WHERE id = 'mine'").run();
      expect(store.displayStatus("mine")).toBe("interrupted");
      expect(store.listSessions()[0]).toMatchObject({ session_id: "mine", status: "interrupted" });
      expect(store.getSession("mine").status_reason).toMatch(/the pid is now another process's/);
      // Claimed, it is this process's again.
      expect(store.claimInterrupted("mi")).toBe("mine");
      expect(store.displayStatus("mine")).toBe("running");
    } finally {
      store.close();
    }
  });
});
