/** Zod schemas of everything the robot simulator takes in or gives out: the single source of truth. */
import { z } from "zod";
import { RobotError } from "./errors.js";

/** Error codes of motion and gripper tools (as in the issue; NONE = it went as asked). */
export const ErrorCode = z.enum([
  "NONE",
  "UNREACHABLE",
  "INVALID_ARGS",
  "COLLISION_TABLE",
  "COLLISION_OBJECT",
  "GRASP_MISSED",
  "GRASP_WIDTH_EXCEEDED",
  "HOLDING_ALREADY",
  "HOLDING_NOTHING",
  "OBJECT_DROPPED",
  "OBJECT_TOPPLED",
  "STEP_LIMIT",
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

/** Events besides errors: what else happened during an action. */
export const EventCode = z.union([ErrorCode, z.enum(["GRASPED", "RELEASED", "OBJECT_MOVED"])]);
export type EventCode = z.infer<typeof EventCode>;

export const MotionEvent = z.object({
  code: EventCode,
  object: z.string().optional(),
  message: z.string(),
});
export type MotionEvent = z.infer<typeof MotionEvent>;

export const GripperState = z.object({
  position: z.tuple([z.number(), z.number(), z.number()]),
  yaw: z.number(),
  opening: z.number(),
  closed: z.boolean(),
  holding: z.string().nullable(),
});
export type GripperState = z.infer<typeof GripperState>;

/**
 * What a motion tool returns. With feedback "state" ok/error_code are null and events empty; with "silent"
 * everything but the message is null/empty — the agent must look (get_observation) to know what happened.
 */
export const MotionResult = z.object({
  ok: z.boolean().nullable(),
  error_code: ErrorCode.nullable(),
  message: z.string(),
  events: z.array(MotionEvent),
  holding: z.string().nullable(),
  gripper: GripperState.optional(),
});
export type MotionResult = z.infer<typeof MotionResult>;

/** How much a motion tool tells: verbose codes, the new state only, or nothing. */
export const Feedback = z.enum(["verbose", "state", "silent"]);
export type Feedback = z.infer<typeof Feedback>;

/**
 * Failure modes, all driven by the episode's seeded failure stream. "off" is all zeros; "on" the defaults.
 */
export const FailureSettings = z
  .object({
    /** Chance that a well-centred grasp still misses. */
    grasp_miss_base: z.number().min(0).max(1).default(0.04),
    /** Extra miss chance per centimetre the grasp is off the object's centre (beyond 4 mm). */
    grasp_miss_per_cm: z.number().min(0).max(1).default(0.35),
    /** Chance per metre travelled that a held object slips out (doubled when grasped off-centre). */
    slip_per_metre: z.number().min(0).max(10).default(0.03),
    /** Touching an object pushes it (it may topple) instead of stopping just short of it. */
    collision_push: z.boolean().default(true),
    /** Chance that a block released on top of another makes the stack collapse. */
    stack_collapse: z.number().min(0).max(1).default(0.06),
    /** Standard deviation (m) of where a released object ends up, and a tenth of that in radians of yaw. */
    placement_noise: z.number().min(0).max(0.05).default(0.003),
    /** Standard deviation (m) of where the gripper stops in x and y. */
    motion_noise: z.number().min(0).max(0.02).default(0.0015),
  })
  .strict();
export type FailureSettings = z.infer<typeof FailureSettings>;

export const FAILURES_OFF: FailureSettings = {
  grasp_miss_base: 0,
  grasp_miss_per_cm: 0,
  slip_per_metre: 0,
  collision_push: false,
  stack_collapse: 0,
  placement_noise: 0,
  motion_noise: 0,
};
export const FAILURES_ON: FailureSettings = FailureSettings.parse({});

/** Per-run settings of an environment (the server's command line, or the bench). */
export const RunSettings = z
  .object({
    failures: FailureSettings.default(FAILURES_OFF),
    feedback: Feedback.default("verbose"),
    /** check_task_completion answers only when this is true. */
    allow_check: z.boolean().default(true),
    /** Motion and gripper actions per episode before STEP_LIMIT. */
    max_actions: z.number().int().min(1).default(150),
  })
  .strict();
export type RunSettings = z.infer<typeof RunSettings>;
export type RunSettingsInput = z.input<typeof RunSettings>;

/** Parse "on", "off" or a JSON object of FailureSettings fields (missing fields take the "on" defaults). */
export function parseFailures(text: string): FailureSettings {
  const bad = (why: string) => new RobotError("BAD_ARGUMENT", why);
  const t = text.trim();
  if (t === "off") return FAILURES_OFF;
  if (t === "on") return FAILURES_ON;
  let raw: unknown;
  try {
    raw = JSON.parse(t);
  } catch {
    throw bad(`failures must be "on", "off" or a JSON object of settings, got ${JSON.stringify(text)}`);
  }
  const parsed = FailureSettings.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw bad(`failures: ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}

export const Waypoint = z.object({
  x: z.number(),
  y: z.number(),
  z: z.number(),
  yaw: z.number().optional(),
  /** Open or close the gripper on arrival. */
  gripper: z.enum(["open", "close"]).optional(),
});
export type Waypoint = z.infer<typeof Waypoint>;

const Vec = z.tuple([z.number(), z.number(), z.number()]);

/** One object as the robot perceives it. */
export const ObjectObservation = z.object({
  name: z.string(),
  type: z.string(),
  colour: z.string(),
  /** Centre of the object (m). */
  position: Vec,
  /** Heading of the object's x axis, radians counter-clockwise (cylinders: 0). */
  yaw: z.number(),
  /** Extents along the object's own axes (m). */
  size: Vec,
  bbox: z.object({ min: Vec, max: Vec }),
  upright: z.boolean(),
  /** What it rests on: another object's name, "table", "floor", or null (held / in the air). */
  on: z.string().nullable(),
  /** The container or zone it is in, if any. */
  in: z.string().nullable(),
  graspable: z.boolean(),
  fixed: z.boolean(),
});
export type ObjectObservation = z.infer<typeof ObjectObservation>;

export const Observation = z.object({
  task: z.string(),
  instruction: z.string(),
  gripper: GripperState,
  objects: z.array(ObjectObservation),
  actions: z.number(),
  sim_time_s: z.number(),
});
export type Observation = z.infer<typeof Observation>;

export const Condition = z.object({ name: z.string(), met: z.boolean(), detail: z.string() });
export type Condition = z.infer<typeof Condition>;

export const SuccessReport = z.object({ success: z.boolean(), conditions: z.array(Condition) });
export type SuccessReport = z.infer<typeof SuccessReport>;
