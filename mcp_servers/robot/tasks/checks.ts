/** Condition builders shared by the tasks' success checks. */
import { dist2d } from "../geometry.js";
import { insideOpenBox, insideZone } from "../observation.js";
import type { Condition } from "../schemas.js";
import type { CheckContext } from "./types.js";

const fmt = (v: readonly number[]) => `(${v.map((x) => x.toFixed(3)).join(", ")})`;

export function nothingGrasped(ctx: CheckContext): Condition {
  return {
    name: "nothing grasped",
    met: ctx.holding === null,
    detail: ctx.holding === null ? "the gripper holds nothing" : `the gripper still holds ${ctx.holding}`,
  };
}

export function upright(ctx: CheckContext, name: string): Condition {
  const met = ctx.facts.upright.get(name) ?? false;
  return { name: `${name} upright`, met, detail: met ? `${name} stands upright` : `${name} is toppled` };
}

export function restsOn(ctx: CheckContext, name: string, support: string): Condition {
  const on = ctx.facts.on.get(name) ?? null;
  return {
    name: `${name} on ${support}`,
    met: on === support,
    detail: `${name} rests on ${on ?? "nothing (held or in the air)"}`,
  };
}

export function centreInZone(ctx: CheckContext, name: string, zone: string): Condition {
  const p = ctx.scene.pose(name).position;
  const met = insideZone(ctx.scene, zone, p);
  return {
    name: `${name} in ${zone}`,
    met,
    detail: `${name} centre at ${fmt(p)} is ${met ? "inside" : "outside"} ${zone}`,
  };
}

/** Inside an open box: centre within its walls and bottom below its rim (the RLBench sensor volume). */
export function insideBox(ctx: CheckContext, name: string, box: string): Condition {
  const p = ctx.scene.pose(name).position;
  const rim = ctx.facts.boxes.get(box)!.max[2];
  const bottom = ctx.facts.boxes.get(name)!.min[2];
  const met = insideOpenBox(ctx.scene, box, p) && bottom < rim && ctx.holding !== name;
  return {
    name: `${name} in ${box}`,
    met,
    detail: `${name} centre ${fmt(p)}, bottom z ${bottom.toFixed(3)}: ${met ? "inside" : "not inside"} ${box}`,
  };
}

/** Horizontal distance between two objects' centres within `tol`. */
export function centredOn(ctx: CheckContext, name: string, base: string, tol: number): Condition {
  const d = dist2d(ctx.scene.pose(name).position, ctx.scene.pose(base).position);
  return {
    name: `${name} centred on ${base}`,
    met: d <= tol,
    detail: `${name} is ${(d * 1000).toFixed(1)} mm off ${base}'s axis (limit ${(tol * 1000).toFixed(0)} mm)`,
  };
}
