/**
 * RobotEnv: the simulator's public API, one episode at a time. The MCP tools, the experts and the bench all
 * drive it through these methods; motion results pass through the run's feedback setting.
 */
import { closeGripper, openGripper } from "./grip.js";
import { moveGripper } from "./motion.js";
import type { ActionOutcome } from "./outcome.js";
import { Episode } from "./episode.js";
import { RobotError } from "./errors.js";
import { GRIPPER } from "./gripper.js";
import { objectObservation, observationText } from "./observation.js";
import { loadRapier, PHYSICS } from "./physics.js";
import { renderScene, type View } from "./render/scene.js";
import {
  RunSettings,
  type MotionResult,
  type ObjectObservation,
  type Observation,
  type RunSettingsInput,
  type SuccessReport,
  type Waypoint,
} from "./schemas.js";
import { buildTask, getTask, variationForSeed, type Goal } from "./tasks/index.js";

export interface ResetResult {
  task: string;
  seed: number;
  variation: number;
  instruction: string;
  goal: Goal;
  observation: Observation;
}

export interface FinishResult {
  finished: true;
  claimed_success: boolean;
  reason: string;
  /** Only when the run allows checks. */
  success?: boolean;
}

/** What one finished (or abandoned) episode amounts to, for benchmarks. */
export interface EpisodeRecord {
  task: string;
  seed: number;
  variation: number;
  success: boolean;
  claimed_success: boolean | null;
  finished: boolean;
  actions: number;
  tool_calls: number;
  sim_steps: number;
  codes: Record<string, number>;
}

function move(ep: Episode, x: number, y: number, z: number, yaw?: number): ActionOutcome {
  const bad = [x, y, z, yaw ?? 0].some((v) => typeof v !== "number" || !Number.isFinite(v));
  if (bad)
    return { code: "INVALID_ARGS", message: "x, y, z and yaw must be finite numbers (m, rad)", events: [] };
  return moveGripper(ep, { position: [x, y, z], yaw: yaw ?? ep.pose.yaw });
}

export class RobotEnv {
  readonly settings: RunSettings;
  private episode: Episode | null = null;
  /** Called once per episode when it is finished or replaced by a reset. */
  onEpisodeEnd?: (record: EpisodeRecord) => void;

  private constructor(settings: RunSettings) {
    this.settings = settings;
  }

  /** Loads the physics engine (once per process) and returns a ready environment. */
  static async create(settings: RunSettingsInput = {}): Promise<RobotEnv> {
    await loadRapier();
    return new RobotEnv(RunSettings.parse(settings));
  }

  private current(): Episode {
    if (!this.episode) throw new RobotError("NO_EPISODE", "no episode yet: call reset(task, seed) first");
    return this.episode;
  }

  private active(): Episode {
    const ep = this.current();
    if (ep.finished)
      throw new RobotError(
        "EPISODE_FINISHED",
        "the episode is finished: call reset(task, seed) to start another",
      );
    return ep;
  }

  reset(task: string, seed: number, variation?: number): ResetResult {
    const def = getTask(task);
    if (!Number.isInteger(seed) || seed < 0)
      throw new RobotError("BAD_ARGUMENT", `seed must be an integer ≥ 0, got ${seed}`);
    const v = variation ?? variationForSeed(def, seed);
    if (!Number.isInteger(v) || v < 0 || v >= def.variations) {
      throw new RobotError(
        "BAD_VARIATION",
        `${task} has variations 0..${def.variations - 1}, got ${variation}`,
      );
    }
    this.endEpisode();
    const instance = buildTask(def, seed, v);
    this.episode = new Episode(def, seed, v, instance, this.settings.failures);
    this.episode.toolCalls = 1;
    return {
      task: def.name,
      seed,
      variation: v,
      instruction: instance.instruction,
      goal: instance.goal,
      observation: this.buildObservation(this.episode),
    };
  }

  /** The record of the current episode (success is evaluated now). */
  record(): EpisodeRecord {
    const ep = this.current();
    return {
      task: ep.task.name,
      seed: ep.seed,
      variation: ep.variation,
      success: this.evaluate(ep).success,
      claimed_success: ep.finished?.claimed ?? null,
      finished: ep.finished !== null,
      actions: ep.actions,
      tool_calls: ep.toolCalls,
      sim_steps: ep.scene.steps,
      codes: Object.fromEntries(ep.codes),
    };
  }

  private endEpisode(): void {
    const ep = this.episode;
    if (!ep) return;
    if (!ep.finished) this.onEpisodeEnd?.(this.record());
    ep.scene.free();
    this.episode = null;
  }

  /** Free the physics world (the environment can still reset later). */
  close(): void {
    this.endEpisode();
  }

  private buildObservation(ep: Episode): Observation {
    const facts = ep.facts();
    return {
      task: ep.task.name,
      instruction: ep.instance.instruction,
      gripper: ep.gripperState(),
      objects: [...ep.scene.objects.keys()].map((n) => objectObservation(ep.scene, n, facts)),
      actions: ep.actions,
      sim_time_s: Math.round(ep.scene.steps * PHYSICS.timestep * 100) / 100,
    };
  }

  observe(): Observation {
    const ep = this.current();
    ep.toolCalls++;
    return this.buildObservation(ep);
  }

  observeText(): string {
    return observationText(this.observe());
  }

  detect(name: string): ObjectObservation {
    const ep = this.current();
    ep.toolCalls++;
    if (!ep.scene.objects.has(name)) {
      const names = [...ep.scene.objects.keys()];
      throw new RobotError(
        "UNKNOWN_OBJECT",
        `no object named ${JSON.stringify(name)}; objects: ${names.join(", ")}`,
      );
    }
    return objectObservation(ep.scene, name, ep.facts());
  }

  /** Run one action under the step limit and tally its code. */
  private perform(ep: Episode, run: (ep: Episode) => ActionOutcome): ActionOutcome {
    let out: ActionOutcome;
    if (ep.actions >= this.settings.max_actions) {
      out = {
        code: "STEP_LIMIT",
        message: `the episode's limit of ${this.settings.max_actions} actions is used up`,
        events: [],
      };
    } else {
      ep.actions++;
      out = run(ep);
    }
    if (out.code !== "NONE") ep.codes.set(out.code, (ep.codes.get(out.code) ?? 0) + 1);
    return out;
  }

  /** One tool call = one action, presented with the run's feedback setting. */
  private act(run: (ep: Episode) => ActionOutcome): MotionResult {
    const ep = this.active();
    ep.toolCalls++;
    return this.present(ep, this.perform(ep, run));
  }

  private present(ep: Episode, out: ActionOutcome): MotionResult {
    const full: MotionResult = {
      ok: out.code === "NONE",
      error_code: out.code,
      message: out.message,
      events: out.events,
      holding: ep.holding,
      gripper: ep.gripperState(),
    };
    switch (this.settings.feedback) {
      case "verbose":
        return full;
      case "state":
        return {
          ok: null,
          error_code: null,
          message: "feedback: state only",
          events: [],
          holding: ep.holding,
          gripper: full.gripper,
        };
      case "silent":
        return {
          ok: null,
          error_code: null,
          message: "feedback: silent (look with get_observation)",
          events: [],
          holding: null,
        };
    }
  }

  moveTo(x: number, y: number, z: number, yaw?: number): MotionResult {
    return this.act((ep) => move(ep, x, y, z, yaw));
  }

  openGripper(width: number = GRIPPER.maxOpening): MotionResult {
    return this.act((ep) => openGripper(ep, width));
  }

  closeGripper(): MotionResult {
    return this.act((ep) => closeGripper(ep));
  }

  /** Waypoints one after another (each leg one action); stops at the first that does not go as asked. */
  executeTrajectory(waypoints: Waypoint[]): MotionResult & { completed: number } {
    const ep = this.active();
    ep.toolCalls++;
    if (waypoints.length === 0 || waypoints.length > 50) {
      const out = this.perform(ep, () => ({
        code: "INVALID_ARGS",
        message: `give 1 to 50 waypoints, got ${waypoints.length}`,
        events: [],
      }));
      return { ...this.present(ep, out), completed: 0 };
    }
    const events: ActionOutcome["events"] = [];
    let completed = 0;
    let last: ActionOutcome = { code: "NONE", message: "", events: [] };
    for (const [i, w] of waypoints.entries()) {
      last = this.perform(ep, (e) => move(e, w.x, w.y, w.z, w.yaw));
      events.push(...last.events);
      if (last.code === "NONE" && w.gripper) {
        last = this.perform(ep, (e) =>
          w.gripper === "open" ? openGripper(e, GRIPPER.maxOpening) : closeGripper(e),
        );
        events.push(...last.events);
      }
      if (last.code !== "NONE") {
        last = { code: last.code, message: `waypoint ${i + 1}: ${last.message}`, events };
        break;
      }
      completed++;
    }
    const out: ActionOutcome =
      last.code === "NONE"
        ? { code: "NONE", message: `followed ${completed} waypoint(s); ${last.message}`, events }
        : last;
    return { ...this.present(ep, out), completed };
  }

  private evaluate(ep: Episode): SuccessReport {
    const conditions = ep.task.check({
      scene: ep.scene,
      facts: ep.facts(),
      holding: ep.holding,
      goal: ep.instance.goal,
    });
    return { success: conditions.every((c) => c.met), conditions };
  }

  checkTaskCompletion(): SuccessReport {
    const ep = this.current();
    ep.toolCalls++;
    if (!this.settings.allow_check) {
      throw new RobotError(
        "CHECK_DISABLED",
        "check_task_completion is disabled for this run: judge from get_observation",
      );
    }
    return this.evaluate(ep);
  }

  finish(claimedSuccess: boolean, reason: string): FinishResult {
    const ep = this.active();
    ep.toolCalls++;
    ep.finished = { claimed: claimedSuccess, reason };
    const record = this.record();
    this.onEpisodeEnd?.(record);
    const out: FinishResult = { finished: true, claimed_success: claimedSuccess, reason };
    if (this.settings.allow_check) out.success = record.success;
    return out;
  }

  /** A PNG of the scene from above ("top") or from the front ("front"). */
  image(view: View = "top", size = 512): Buffer {
    const ep = this.current();
    ep.toolCalls++;
    return renderScene(ep, view, size);
  }
}
