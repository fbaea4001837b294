import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { TmuxSession, withTmux } from "./tmux.js";

describe("tmux harness", () => {
  it("reads the screen at a fixed size, times out with the screen in the message, and always cleans up", async () => {
    let session: TmuxSession | undefined;
    const failure = await withTmux(
      ["sh", "-c", 'printf "hello %s\\n" "$GREETING"; stty size; sleep 30'],
      { cols: 90, rows: 20, env: { GREETING: "world" } },
      async (t) => {
        session = t;
        await t.waitFor("hello world");
        await t.waitFor("20 90");
        await t.waitFor("never shown", { timeoutMs: 300 });
      },
    ).catch((e: unknown) => e as Error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(
      /"never shown" did not appear within 300ms; screen:\nhello world/,
    );
    // The private server is gone: its socket folder was removed and a new command on it fails.
    const dir = (session as unknown as { dir: string }).dir;
    expect(existsSync(dir)).toBe(false);
    await expect(session!.screen()).rejects.toThrow();
  });

  it("reports the exit status of the command and keeps its last output", async () => {
    await withTmux(["sh", "-c", "echo done; exit 3"], {}, async (t) => {
      expect(await t.waitForExit()).toBe(3);
      expect(await t.output()).toBe("done");
    });
  });
});
