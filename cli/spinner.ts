/**
 * "⠙ decision model 4.2 s" on stderr while something slow runs, so a long model call or tool call is not
 * mistaken for a hang. Only on a terminal: nothing is animated into a pipe or a file.
 */
const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export class Spinner {
  private timer?: NodeJS.Timeout;
  private label = "";
  private since = 0;
  private frame = 0;
  private shown = false;

  constructor(
    private readonly out: NodeJS.WriteStream = process.stderr,
    private readonly enabled = !!out.isTTY,
  ) {}

  /** Show `label` with the time since now (replacing what was shown). */
  start(label: string): void {
    if (!this.enabled) return;
    this.label = label;
    this.since = Date.now();
    this.timer ??= setInterval(() => this.draw(), 100);
    // Never keeps the process alive on its own.
    this.timer.unref();
  }

  /** Whether it is animating now. */
  get active(): boolean {
    return this.timer !== undefined;
  }

  /** Stop and clear the line. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.clear();
  }

  /** Run `write` with the spinner's line cleared first, so trace lines never mix with it. */
  around(write: () => void): void {
    this.clear();
    write();
  }

  private clear(): void {
    if (!this.shown) return;
    this.out.write("\r\x1b[K");
    this.shown = false;
  }

  private draw(): void {
    // A prompt owns the terminal (inquirer puts stdin in raw mode), e.g. a server's elicitation mid-step.
    if (process.stdin.isTTY && process.stdin.isRaw) return this.clear();
    const s = ((Date.now() - this.since) / 1000).toFixed(1);
    this.frame = (this.frame + 1) % FRAMES.length;
    this.out.write(`\r\x1b[K${FRAMES[this.frame]} ${this.label} ${s} s`);
    this.shown = true;
  }
}
