/**
 * Agent teams at the terminal: `pda agents` (the agents of agents.yaml with their contracts and last
 * outcome) and `pda agents stats` (tool statistics per agent). The tree under `pda show` is agent-tree.ts.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import chalk from "chalk";
import type { Command } from "commander";
import { loadAgentsConfig } from "../../agent/index.js";
import { configDir } from "../../config/index.js";
import { ConfigError, defaultDbPath } from "../../core/index.js";
import { SessionStore, type AgentToolStat } from "../../memory/index.js";
import { statusColor } from "../agent-tree.js";
import { runCommand } from "../context.js";

interface Globals {
  config?: string;
  db?: string;
}

const out = (text: string) => void process.stdout.write(`${text}\n`);

function openStore(g: Globals): SessionStore | null {
  const path = resolve(g.db ?? process.env.PDA_DB ?? defaultDbPath());
  return existsSync(path) ? SessionStore.open(path, { mustExist: true }) : null;
}

function statLine(s: AgentToolStat): string {
  const rate = `${(s.success_rate * 100).toFixed(0)}%`;
  const color = s.success_rate >= 0.95 ? chalk.green : s.success_rate >= 0.8 ? chalk.yellow : chalk.red;
  const errs = Object.entries(s.error_kinds)
    .map(([k, n]) => `${k}×${n}`)
    .join(", ");
  return `${(s.agent || "(no agent)").padEnd(16)} ${`${s.server}.${s.tool}`.padEnd(32)} ${String(s.calls).padStart(6)} calls  ${color(rate.padStart(4))}  mean ${Math.round(s.mean_ms)} ms${errs ? chalk.dim(`  ${errs}`) : ""}`;
}

export function register(program: Command) {
  const agents = program
    .command("agents")
    .description("agent teams: the agents of agents.yaml (list, the default) and tool statistics per agent");
  agents
    .command("list", { isDefault: true })
    .description("the agents of agents.yaml: description, tools, sub-agents, result contract, last outcome")
    .option("--json", "print them as JSON")
    .action((opts: { json?: boolean }, cmd: Command) =>
      runCommand(async () => {
        const g = cmd.optsWithGlobals() as Globals;
        const config = loadAgentsConfig(configDir(g.config));
        const store = openStore(g);
        try {
          const last = (name: string) =>
            store?.listSessions({ limit: 200 }).find((s) => s.agent === name) ?? null;
          const rows = Object.values(config.agents).map((a) => ({
            name: a.name,
            description: a.description,
            tools: a.tools,
            subagents: a.subagents,
            handoffs: a.handoffs,
            decision: a.decision,
            error_codes: a.codes,
            fields: a.result.fields,
            recovery: a.recoveryTable,
            last: last(a.name),
          }));
          if (opts.json) return out(JSON.stringify(rows, null, 2));
          out(chalk.dim(config.file));
          for (const r of rows) {
            const l = r.last;
            const lastText = l
              ? `${statusColor(l.status)} ${chalk.dim(l.session_id.slice(0, 8))}`
              : chalk.dim("never run");
            out(`${chalk.bold(r.name)} ${chalk.dim(`(${r.decision})`)} ${r.description}  ${lastText}`);
            out(chalk.dim(`    tools: ${r.tools.join(", ") || "none"}`));
            if (r.subagents.length) out(chalk.dim(`    calls: ${r.subagents.join(", ")}`));
            if (r.handoffs.length) out(chalk.dim(`    hands over to: ${r.handoffs.join(", ")}`));
            out(chalk.dim(`    error_code: ${r.error_codes.join(" | ")}`));
          }
        } finally {
          store?.close();
        }
      }),
    );

  agents
    .command("stats")
    .description("tool statistics per agent: calls, success rate, mean latency, error kinds")
    .option("--since <iso-time>", "only calls from this time on")
    .option("--json", "print the statistics as JSON")
    .action((opts: { since?: string; json?: boolean }, cmd: Command) =>
      runCommand(async () => {
        if (opts.since !== undefined && Number.isNaN(Date.parse(opts.since)))
          throw new ConfigError(`--since must be an ISO date or time, got "${opts.since}"`);
        const since = opts.since === undefined ? undefined : new Date(opts.since).toISOString();
        const store = openStore(cmd.optsWithGlobals() as Globals);
        let stats: AgentToolStat[] = [];
        try {
          stats = store?.agentToolStats(since) ?? [];
        } finally {
          store?.close();
        }
        if (opts.json) return out(JSON.stringify(stats, null, 2));
        if (stats.length === 0) return out(chalk.dim("no tool calls logged"));
        for (const s of stats) out(statLine(s));
      }),
    );
}
