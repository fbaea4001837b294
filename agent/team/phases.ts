/**
 * An agent's own system text, added to the perception and decision prompts (perceptionPhase, decisionPhase):
 * its role (prompt file), the agents it may call with their contracts and recovery tables, how it hands over,
 * and, for a sub-agent, how it ends (its report).
 */
import { renderPrompt } from "../../prompts/index.js";
import { SUCCESS_CODE, UNKNOWN_CODE, type Agent } from "./config.js";

/** The system text sections of one agent, for perception and for decision. */
export interface AgentSections {
  perception: string;
  decision: string;
}

function codeList(a: Agent): string {
  return a.codes
    .map((c) =>
      c === SUCCESS_CODE ? `${c} (success)` : c === UNKNOWN_CODE ? `${c} (ended without a report)` : c,
    )
    .join(" | ");
}

/** How one callable agent appears in its caller's decision prompt: call, tools, contract, recovery table. */
export function renderCallable(a: Agent): string {
  const lines = [`- agents.${a.name}({task, ...}) — ${a.description.trim()}`];
  lines.push(`  tools: ${a.tools.join(", ") || "(none)"}`);
  lines.push(`  error_code: ${codeList(a)}`);
  const fields = Object.entries(a.result.fields);
  if (fields.length) {
    const f = fields.map(([k, v]) => `${k} (${v.type})${v.description ? `: ${v.description}` : ""}`);
    lines.push(`  extra fields: ${f.join("; ")}`);
  }
  const recovery = Object.entries(a.recoveryTable);
  if (recovery.length) {
    lines.push("  on failure:");
    for (const [code, what] of recovery) lines.push(`    ${code} → ${what}`);
  }
  return lines.join("\n");
}

/** The sections for `agent` in `team` (agent name → agent); `sub` when it was called by another agent. */
export function agentSections(agent: Agent, team: Record<string, Agent>, sub: boolean): AgentSections {
  const role = renderPrompt("agents/role", {
    name: agent.name,
    description: agent.description,
    prompt: agent.promptText,
  });
  const parts = [role];
  if (agent.subagents.length) {
    parts.push(
      renderPrompt("agents/subagents", {
        agents: agent.subagents.map((n) => renderCallable(team[n]!)).join("\n"),
      }),
    );
  }
  if (!sub && agent.handoffs.length) {
    const targets = agent.handoffs.map((n) => `- ${n}: ${team[n]!.description.trim()}`).join("\n");
    parts.push(renderPrompt("agents/handoffs", { targets }));
  }
  if (sub) {
    const fields = Object.entries(agent.result.fields);
    parts.push(
      renderPrompt("agents/report", {
        codes: agent.codes.filter((c) => c !== UNKNOWN_CODE).join(", "),
        field_names: fields.map(([k]) => `, ${k}`).join(""),
        fields: fields.length
          ? `- extra fields (optional): ${fields.map(([k, v]) => `\`${k}\` (${v.type})${v.description ? ` ${v.description}` : ""}`).join("; ")}.\n`
          : "",
      }),
    );
  }
  const perception = [role, sub ? renderPrompt("agents/report_perception", { name: agent.name }) : ""];
  return { perception: perception.join("\n"), decision: parts.join("\n") };
}
