/**
 * What to move where, per task: `plan` lists every pick-and-place from the first look (the plain expert);
 * `next` re-plans one move from the current state (the retrying expert), or says the goal looks reached.
 */
import { dist2d } from "../geometry.js";
import type { ObjectObservation, Observation } from "../schemas.js";
import { REGION } from "../tasks/layout.js";
import type { Goal } from "../tasks/index.js";
import { find, type Op } from "./skills.js";

export type Next = Op | "done" | "stuck";

export interface Planner {
  plan(obs: Observation, goal: Goal): Op[];
  next(obs: Observation, goal: Goal): Next;
}

const str = (v: unknown) => String(v);

/** A spot on the table far from everything (grid search, deterministic). */
export function freeSpot(obs: Observation, avoid: string[] = []): { x: number; y: number } {
  let best = { x: 0, y: 0, d: -Infinity };
  for (let x = REGION.x[0]; x <= REGION.x[1] + 1e-9; x += 0.02) {
    for (let y = REGION.y[0]; y <= REGION.y[1] + 1e-9; y += 0.02) {
      let d = Infinity;
      for (const o of obs.objects) {
        if (o.name === obs.gripper.holding && !avoid.includes(o.name)) continue;
        const dx = Math.max(o.bbox.min[0] - x, 0, x - o.bbox.max[0]);
        const dy = Math.max(o.bbox.min[1] - y, 0, y - o.bbox.max[1]);
        d = Math.min(d, Math.hypot(dx, dy));
      }
      if (d > best.d + 1e-9) best = { x, y, d };
    }
  }
  return { x: best.x, y: best.y };
}

function aside(obs: Observation, name: string): Op {
  const spot = freeSpot(obs);
  return { object: name, target: { x: spot.x, y: spot.y, z: 0 } };
}

/** Nothing rests on it (so a top-down grasp can reach it). */
function clearOnTop(obs: Observation, name: string): boolean {
  return !obs.objects.some((o) => o.on === name);
}

/** If the gripper still holds something the plan does not want now, put it down first. */
function heldFirst(obs: Observation, wanted: string): Op | null {
  const h = obs.gripper.holding;
  return h && h !== wanted ? aside(obs, h) : null;
}

const putBlock: Planner = {
  plan: (obs, goal) => {
    const zone = find(obs, str(goal.zone));
    return [{ object: str(goal.block), target: { x: zone.position[0], y: zone.position[1], z: 0 } }];
  },
  next(obs, goal) {
    const b = find(obs, str(goal.block));
    if (b.in === goal.zone && b.on === "table" && b.upright) return "done";
    return heldFirst(obs, b.name) ?? this.plan(obs, goal)[0]!;
  },
};

function column(obs: Observation, blocks: string[], zone: string): ObjectObservation[] {
  let best: ObjectObservation[] = [];
  for (const name of blocks) {
    const base = find(obs, name);
    if (base.on !== "table" || base.in !== zone) continue;
    const col = [base];
    for (;;) {
      const top = col[col.length - 1]!;
      const next = obs.objects.find((o) => blocks.includes(o.name) && !col.includes(o) && o.on === top.name);
      if (!next) break;
      col.push(next);
    }
    if (col.length > best.length) best = col;
  }
  return best;
}

const stack: Planner = {
  plan(obs, goal) {
    const zone = find(obs, str(goal.zone));
    const blocks = (goal.blocks as string[]).slice(0, Number(goal.count));
    return blocks.map((name, k) => ({
      object: name,
      target: { x: zone.position[0], y: zone.position[1], z: k * find(obs, name).size[2] },
    }));
  },
  next(obs, goal) {
    const blocks = goal.blocks as string[];
    const count = Number(goal.count);
    const zone = find(obs, str(goal.zone));
    const col = column(obs, blocks, zone.name);
    const tilted = col.findIndex((b) => !b.upright);
    if (tilted >= 0) return aside(obs, col[col.length - 1]!.name);
    if (col.length >= count && !obs.gripper.holding) return "done";
    // Anything else standing on the column's top, or occupying an empty zone, goes aside first.
    const top = col[col.length - 1];
    const blocker = obs.objects.find((o) =>
      top
        ? o.on === top.name && !blocks.includes(o.name)
        : !o.fixed && o.in === zone.name && !blocks.includes(o.name),
    );
    if (blocker) return aside(obs, blocker.name);
    if (!top) {
      const squatter = obs.objects.find(
        (o) =>
          !o.fixed &&
          o.name !== obs.gripper.holding &&
          dist2d(o.position, zone.position) < 0.05 &&
          o.on !== "table",
      );
      if (squatter) return aside(obs, squatter.name);
    }
    const held = obs.gripper.holding;
    const candidates = blocks
      .map((n) => find(obs, n))
      .filter((b) => !col.includes(b) && (b.name === held || clearOnTop(obs, b.name)));
    if (held && !candidates.some((c) => c.name === held)) return aside(obs, held);
    candidates.sort(
      (a, b) =>
        Number(b.name === held) - Number(a.name === held) ||
        Number(b.upright) - Number(a.upright) ||
        dist2d(a.position, zone.position) - dist2d(b.position, zone.position),
    );
    const pickme = candidates[0];
    if (!pickme) {
      // A spare block may be buried under another: free it.
      const buried = blocks.map((n) => find(obs, n)).find((b) => !col.includes(b));
      const onIt = buried && obs.objects.find((o) => o.on === buried.name);
      return onIt ? aside(obs, onIt.name) : "stuck";
    }
    const [x, y] = top ? [top.position[0], top.position[1]] : [zone.position[0], zone.position[1]];
    return { object: pickme.name, target: { x, y, z: top ? top.bbox.max[2] : 0 } };
  },
};

const SLOTS: [number, number][] = [
  [-0.035, -0.035],
  [0.035, 0.035],
  [-0.035, 0.035],
  [0.035, -0.035],
];

function bowlSlots(obs: Observation, bowl: ObjectObservation): { x: number; y: number }[] {
  return SLOTS.map(([dx, dy]) => ({ x: bowl.position[0] + dx, y: bowl.position[1] + dy })).filter(
    (s) =>
      !obs.objects.some(
        (o) => o.in === bowl.name && o.name !== obs.gripper.holding && dist2d(o.position, [s.x, s.y]) < 0.04,
      ),
  );
}

const emptyContainer: Planner = {
  plan(obs, goal) {
    const bowl = find(obs, str(goal.bowl));
    const rim = bowl.bbox.max[2] + 0.005;
    return (goal.items as string[]).map((item, i) => {
      const [dx, dy] = SLOTS[i]!;
      return {
        object: item,
        target: { x: bowl.position[0] + dx, y: bowl.position[1] + dy, z: rim, drop: true },
      };
    });
  },
  next(obs, goal) {
    const bowl = find(obs, str(goal.bowl));
    const items = (goal.items as string[]).map((n) => find(obs, n));
    const held = obs.gripper.holding;
    const todo = items.filter((o) => o.in !== bowl.name || o.name === held);
    if (todo.length === 0) return "done";
    const first =
      held && todo.some((o) => o.name === held) ? find(obs, held) : todo.find((o) => clearOnTop(obs, o.name));
    if (!first) return "stuck";
    const slot = bowlSlots(obs, bowl)[0] ?? { x: bowl.position[0], y: bowl.position[1] };
    return (
      heldFirst(obs, first.name) ?? {
        object: first.name,
        target: { ...slot, z: bowl.bbox.max[2] + 0.005, drop: true },
      }
    );
  },
};

const closeJar: Planner = {
  plan(obs, goal) {
    const jar = find(obs, str(goal.jar));
    return [
      { object: str(goal.lid), target: { x: jar.position[0], y: jar.position[1], z: jar.bbox.max[2] } },
    ];
  },
  next(obs, goal) {
    const jar = find(obs, str(goal.jar));
    const lid = find(obs, str(goal.lid));
    if (!jar.upright) return "stuck";
    if (lid.on === jar.name && lid.upright && dist2d(lid.position, jar.position) <= 0.006) return "done";
    return heldFirst(obs, lid.name) ?? this.plan(obs, goal)[0]!;
  },
};

const rubbish: Planner = {
  plan(obs, goal) {
    const bin = find(obs, str(goal.bin));
    return [
      {
        object: str(goal.rubbish),
        target: { x: bin.position[0], y: bin.position[1], z: bin.bbox.max[2] + 0.01, drop: true },
      },
    ];
  },
  next(obs, goal) {
    const r = find(obs, str(goal.rubbish));
    if (r.in === goal.bin && r.name !== obs.gripper.holding) return "done";
    return heldFirst(obs, r.name) ?? this.plan(obs, goal)[0]!;
  },
};

const meat: Planner = {
  plan(obs, goal) {
    const tray = find(obs, str(goal.tray));
    return [{ object: str(goal.meat), target: { x: tray.position[0], y: tray.position[1], z: 0 } }];
  },
  next(obs, goal) {
    const m = find(obs, str(goal.meat));
    if (m.in === goal.tray && m.on === "table") return "done";
    return heldFirst(obs, m.name) ?? this.plan(obs, goal)[0]!;
  },
};

export const PLANNERS: Record<string, Planner> = {
  put_block_in_target: putBlock,
  stack_blocks: stack,
  empty_container: emptyContainer,
  close_jar: closeJar,
  rubbish_in_bin: rubbish,
  meat_off_grill: meat,
};
