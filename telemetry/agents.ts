/**
 * The OTLP/HTTP exporters' connections, which pda can cut at exit: a request a slow collector still holds (or a
 * retry after it) would otherwise keep the process alive until the exporter's own timeout (10 s by default,
 * OTEL_EXPORTER_OTLP_TIMEOUT), past the flush limit pda promises.
 */
import type { Agent } from "node:http";

/** Not one of the network error codes the exporter retries: a cut request fails and stays failed. */
const CUT = "the process is exiting before the collector answered";

export interface ExporterAgents {
  /** For the exporters' `httpAgentOptions`: the agent of each protocol. */
  factory(protocol: string): Promise<Agent>;
  /** End every request in flight and refuse new ones. */
  cut(): void;
}

export function exporterAgents(): ExporterAgents {
  let cut = false;
  const agents: Agent[] = [];
  return {
    async factory(protocol) {
      const { Agent: HttpAgent } =
        protocol === "https:" ? await import("node:https") : await import("node:http");
      const agent: Agent = new HttpAgent({ keepAlive: true });
      const connect = agent.createConnection.bind(agent);
      agent.createConnection = (options, done) => {
        if (!cut) return connect(options, done);
        done?.(new Error(CUT), undefined as never);
        return undefined;
      };
      agents.push(agent);
      return agent;
    },
    cut() {
      cut = true;
      for (const agent of agents) {
        for (const list of Object.values(agent.sockets))
          for (const s of list ?? []) s.destroy(new Error(CUT));
        agent.destroy();
      }
    },
  };
}
