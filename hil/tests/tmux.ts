/**
 * A real terminal for tests: a command in a detached tmux session of a fixed size, on a private tmux server
 * (its own socket), so tests never touch anyone's tmux. Read the screen, wait for text, send keys, wait for
 * the command to exit and read all it printed. Every wait has a timeout; `withTmux` always kills the server.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface TmuxOptions {
  cols?: number;
  rows?: number;
  cwd?: string;
  /** Added to the environment the command starts with. */
  env?: Record<string, string>;
}

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const EXIT_MARK = "__pda_tmux_exit__";
/**
 * The command runs under a shell that prints its exit status and then keeps the pane open. Letting the pane
 * die instead loses output: tmux may mark a pane dead before it has read the last bytes a short-lived
 * command wrote. `trap : INT` keeps the shell alive through a Ctrl-C meant for the command (a handler, not an
 * ignore, so the command does not inherit it).
 */
const WRAPPER = `trap : INT; "$@"; printf '\\n${EXIT_MARK}:%d\\n' "$?"; exec sleep 86400`;

export class TmuxSession {
  private readonly target = "pda";
  private constructor(
    private readonly dir: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** Start `command` (argv, run without a shell) in a fresh tmux server. */
  static async start(command: string[], opts: TmuxOptions = {}): Promise<TmuxSession> {
    const dir = mkdtempSync(join(tmpdir(), "pda-tmux-"));
    writeFileSync(
      join(dir, "tmux.conf"),
      "set -g remain-on-exit on\nset -g history-limit 5000\nset -g status off\n",
    );
    const env: NodeJS.ProcessEnv = { ...process.env, ...opts.env };
    delete env.TMUX;
    const t = new TmuxSession(dir, env);
    try {
      await t.tmux(
        "new-session",
        "-d",
        "-s",
        t.target,
        "-x",
        String(opts.cols ?? 100),
        "-y",
        String(opts.rows ?? 30),
        ...(opts.cwd ? ["-c", opts.cwd] : []),
        "--",
        "sh",
        "-c",
        WRAPPER,
        "sh",
        ...command,
      );
    } catch (e) {
      await t.kill();
      throw e;
    }
    return t;
  }

  private async tmux(...args: string[]): Promise<string> {
    const { stdout } = await run(
      "tmux",
      ["-S", join(this.dir, "tmux.sock"), "-f", join(this.dir, "tmux.conf"), ...args],
      { env: this.env, timeout: 5_000 },
    );
    return stdout;
  }

  /** The visible screen, wrapped lines joined, trailing blank lines dropped. */
  async screen(): Promise<string> {
    return (await this.tmux("capture-pane", "-p", "-J", "-t", this.target)).replace(/\n+$/, "");
  }

  /** Everything the command printed, scrollback included (without the harness's exit line). */
  async output(): Promise<string> {
    const text = await this.history();
    return text.replace(new RegExp(`\\n*${EXIT_MARK}:\\d+[\\s\\S]*$`), "").replace(/\n+$/, "");
  }

  private async history(): Promise<string> {
    return this.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", this.target);
  }

  /** Poll the screen until it shows `pattern`; on timeout, throw with the last screen in the message. */
  async waitFor(pattern: string | RegExp, opts: WaitOptions = {}): Promise<string> {
    const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
    let last = "";
    for (;;) {
      last = await this.screen();
      if (typeof pattern === "string" ? last.includes(pattern) : pattern.test(last)) return last;
      if (Date.now() > deadline) {
        throw new Error(
          `tmux: "${String(pattern)}" did not appear within ${opts.timeoutMs ?? 10_000}ms; screen:\n${last}`,
        );
      }
      await sleep(opts.intervalMs ?? 100);
    }
  }

  /** tmux key names: "Enter", "Down", "C-c", "Escape", ... */
  async sendKeys(...keys: string[]): Promise<void> {
    await this.tmux("send-keys", "-t", this.target, ...keys);
  }

  /** Type text literally (no key-name lookup). */
  async type(text: string): Promise<void> {
    await this.tmux("send-keys", "-l", "-t", this.target, text);
  }

  /** Wait for the command to end; its exit status (128 + n when signal n killed it, as a shell reports). */
  async waitForExit(opts: WaitOptions = {}): Promise<number> {
    const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
    const mark = new RegExp(`${EXIT_MARK}:(\\d+)`);
    for (;;) {
      const m = mark.exec(await this.history());
      if (m) return Number(m[1]);
      if (Date.now() > deadline) {
        throw new Error(
          `tmux: the command did not exit within ${opts.timeoutMs ?? 10_000}ms; screen:\n${await this.screen()}`,
        );
      }
      await sleep(opts.intervalMs ?? 100);
    }
  }

  /** Stop the private tmux server (and the command with it) and remove its folder. Safe to call twice. */
  async kill(): Promise<void> {
    try {
      await this.tmux("kill-server");
    } catch {
      // already gone
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Run `fn` against a command in tmux; the session is killed whatever happens. */
export async function withTmux<T>(
  command: string[],
  opts: TmuxOptions,
  fn: (t: TmuxSession) => Promise<T>,
): Promise<T> {
  const t = await TmuxSession.start(command, opts);
  try {
    return await fn(t);
  } finally {
    await t.kill();
  }
}
