/**
 * A sub-agent's models: the caller's providers with the agent's name in front of every role
 * ("pick.decision"), so a scripted model plays each agent its own replies — even when agents run in parallel —
 * and models.yaml may give one agent's role its own settings (a dotted role falls back to its last part).
 */
import type { GenerateRequest, ModelProvider } from "../../core/index.js";

export function agentRole(agent: string, role: string): string {
  return `${agent}.${role}`;
}

export function prefixRoles(model: ModelProvider, agent: string): ModelProvider {
  return {
    get provider() {
      return model.provider;
    },
    get model() {
      return model.model;
    },
    generate<T>(request: GenerateRequest<T>) {
      return model.generate({ ...request, role: agentRole(agent, request.role) });
    },
  };
}
