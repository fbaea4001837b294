/** `pda completion <shell>`: the shell's completion script, made by @bomb.sh/tab from the command table. */
import type { Command } from "commander";
import { ConfigError } from "../../core/index.js";
import { runCommand } from "../context.js";

const SHELLS = ["bash", "zsh", "fish", "powershell"];

export function register(program: Command): void {
  program
    .command("completion")
    .description("print the shell completion script for bash, zsh, fish or powershell")
    .argument("<shell>", SHELLS.join(", "))
    .addHelpText(
      "after",
      `
Install (the script asks \`pda complete -- <words>\` for each Tab):
  bash: pda completion bash >> ~/.bashrc
  zsh:  pda completion zsh >> ~/.zshrc
  fish: pda completion fish > ~/.config/fish/completions/pda.fish`,
    )
    .action((shell: string) =>
      runCommand(async () => {
        if (!SHELLS.includes(shell))
          throw new ConfigError(`pda completion: unknown shell "${shell}" (known: ${SHELLS.join(", ")})`);
        (await import("@bomb.sh/tab")).default.setup("pda", "pda", shell);
      }),
    );
}
