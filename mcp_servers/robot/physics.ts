/**
 * Rigid-body physics with Rapier. The WebAssembly module is loaded lazily, once per process, on the first
 * episode (so the MCP server starts fast). A PhysicsScene is one episode's world; stepping it the same way
 * gives the same result, which is what makes episodes reproducible from a seed.
 */
import type { Collider, RigidBody, World } from "@dimforge/rapier3d-compat";
import { quatFromAxisAngle, quatFromYaw, rotate, add, type Quat, type Vec3 } from "./geometry.js";
import { boxConvex, intersects, prismConvex, type Convex } from "./collide.js";
import { localHullPoints, openBoxParts, type ObjectSpec } from "./objects.js";

export type Rapier = typeof import("@dimforge/rapier3d-compat").default;

let loading: Promise<Rapier> | undefined;
let loaded: Rapier | undefined;

/** Load and initialise Rapier once; later calls return the same module. */
export function loadRapier(): Promise<Rapier> {
  loading ??= (async () => {
    const mod = (await import("@dimforge/rapier3d-compat")).default;
    await mod.init();
    loaded = mod;
    return mod;
  })();
  return loading;
}

export function rapierLoaded(): boolean {
  return loaded !== undefined;
}

function rapier(): Rapier {
  if (!loaded) throw new Error("Rapier is not loaded yet: await loadRapier() first");
  return loaded;
}

/** Fixed numbers of the simulation; a fixed timestep is part of the determinism contract. */
export const PHYSICS = {
  timestep: 1 / 100,
  gravity: -9.81,
  friction: 0.8,
  density: 500,
  /** Table top: x in [-0.5, 0.5], y in [-0.4, 0.4], surface at z = 0. */
  table: { hx: 0.5, hy: 0.4 },
  floorZ: -0.75,
  /** A scene is at rest when every free body moves slower than these for `calmSteps` steps. */
  restSpeed: 0.005,
  restSpin: 0.05,
  calmSteps: 8,
} as const;

const CYLINDER_UP: Quat = quatFromAxisAngle([1, 0, 0], Math.PI / 2);

export interface SimObject {
  spec: ObjectSpec;
  /** null for zones, which are markings without a body. */
  body: RigidBody | null;
}

export interface Pose {
  position: Vec3;
  rotation: Quat;
}

/** A box used as a query shape (gripper fingers, a held object): full size, centre and rotation. */
export interface QueryBox {
  size: Vec3;
  position: Vec3;
  rotation: Quat;
}

export class PhysicsScene {
  readonly world: World;
  readonly objects = new Map<string, SimObject>();
  private readonly owner = new Map<number, string>();
  /** Simulated steps so far in this episode. */
  steps = 0;
  /** Bumped whenever bodies may have moved; keys the cache of world-space parts. */
  private version = 0;
  private readonly partsCache = new Map<string, { version: number; parts: Convex[] }>();

  constructor(specs: ObjectSpec[]) {
    const R = rapier();
    this.world = new R.World({ x: 0, y: 0, z: PHYSICS.gravity });
    this.world.timestep = PHYSICS.timestep;
    // Objects are a few centimetres; scale Rapier's length tolerances to that.
    this.world.lengthUnit = 0.1;
    const table = this.world.createCollider(
      R.ColliderDesc.cuboid(PHYSICS.table.hx, PHYSICS.table.hy, 0.05)
        .setTranslation(0, 0, -0.05)
        .setFriction(PHYSICS.friction),
    );
    this.owner.set(table.handle, "table");
    const floor = this.world.createCollider(
      R.ColliderDesc.cuboid(3, 3, 0.05)
        .setTranslation(0, 0, PHYSICS.floorZ - 0.05)
        .setFriction(PHYSICS.friction),
    );
    this.owner.set(floor.handle, "floor");
    for (const spec of specs) this.add(spec);
  }

  private add(spec: ObjectSpec): void {
    const R = rapier();
    if (spec.shape.kind === "zone") {
      this.objects.set(spec.name, { spec, body: null });
      return;
    }
    const rot = quatFromYaw(spec.yaw);
    const desc = spec.fixed
      ? R.RigidBodyDesc.fixed()
      : R.RigidBodyDesc.dynamic().setLinearDamping(0.05).setAngularDamping(0.1).setCcdEnabled(true);
    desc.setTranslation(...spec.position).setRotation(rot);
    const body = this.world.createRigidBody(desc);
    const density = spec.density ?? PHYSICS.density;
    const colliders: Collider[] = [];
    const shape = spec.shape;
    if (shape.kind === "box") {
      const [x, y, z] = shape.size;
      colliders.push(
        this.world.createCollider(
          R.ColliderDesc.cuboid(x / 2, y / 2, z / 2)
            .setDensity(density)
            .setFriction(PHYSICS.friction),
          body,
        ),
      );
    } else if (shape.kind === "cylinder") {
      colliders.push(
        this.world.createCollider(
          R.ColliderDesc.cylinder(shape.height / 2, shape.radius)
            .setRotation(CYLINDER_UP)
            .setDensity(density)
            .setFriction(PHYSICS.friction),
          body,
        ),
      );
    } else {
      for (const part of openBoxParts(shape)) {
        colliders.push(
          this.world.createCollider(
            R.ColliderDesc.cuboid(part.size[0] / 2, part.size[1] / 2, part.size[2] / 2)
              .setTranslation(...part.offset)
              .setDensity(density)
              .setFriction(PHYSICS.friction),
            body,
          ),
        );
      }
    }
    for (const c of colliders) this.owner.set(c.handle, spec.name);
    this.objects.set(spec.name, { spec, body });
  }

  get(name: string): SimObject {
    const o = this.objects.get(name);
    if (!o) throw new Error(`no object named ${name}`);
    return o;
  }

  pose(name: string): Pose {
    const o = this.get(name);
    if (!o.body) return { position: [...o.spec.position], rotation: quatFromYaw(o.spec.yaw) };
    const t = o.body.translation();
    const r = o.body.rotation();
    return { position: [t.x, t.y, t.z], rotation: { x: r.x, y: r.y, z: r.z, w: r.w } };
  }

  /** World-space points whose convex hull is the object. */
  hullPoints(name: string): Vec3[] {
    const { position, rotation } = this.pose(name);
    return localHullPoints(this.get(name).spec.shape).map((p) => add(position, rotate(rotation, p)));
  }

  isFree(name: string): boolean {
    const o = this.get(name);
    return !!o.body && o.body.isDynamic();
  }

  /** Held objects follow the gripper as kinematic bodies (attachment, as in RLBench). */
  setHeld(name: string, held: boolean): void {
    const R = rapier();
    const body = this.get(name).body;
    if (!body) return;
    body.setBodyType(held ? R.RigidBodyType.KinematicPositionBased : R.RigidBodyType.Dynamic, true);
    if (!held) {
      body.setLinvel({ x: 0, y: 0, z: 0 }, true);
      body.setAngvel({ x: 0, y: 0, z: 0 }, true);
    }
  }

  moveKinematic(name: string, pose: Pose): void {
    const body = this.get(name).body;
    if (!body) return;
    body.setNextKinematicTranslation({ x: pose.position[0], y: pose.position[1], z: pose.position[2] });
    body.setNextKinematicRotation(pose.rotation);
  }

  /** Put a body somewhere at once (used to apply placement noise before a release). */
  teleport(name: string, pose: Pose): void {
    const body = this.get(name).body;
    if (!body) return;
    body.setTranslation({ x: pose.position[0], y: pose.position[1], z: pose.position[2] }, true);
    body.setRotation(pose.rotation, true);
    this.world.propagateModifiedBodyPositionsToColliders();
    this.version++;
  }

  applyImpulse(name: string, impulse: Vec3, at: Vec3): void {
    const body = this.get(name).body;
    if (!body || !body.isDynamic()) return;
    body.applyImpulseAtPoint(
      { x: impulse[0], y: impulse[1], z: impulse[2] },
      { x: at[0], y: at[1], z: at[2] },
      true,
    );
  }

  mass(name: string): number {
    const body = this.get(name).body;
    return body ? body.mass() : 0;
  }

  step(): void {
    this.version++;
    this.world.step();
    this.steps++;
  }

  /** Step until every free body is calm (or `maxSteps`); returns the steps taken. */
  settle(maxSteps = 400): number {
    let calm = 0;
    for (let i = 1; i <= maxSteps; i++) {
      this.step();
      calm = this.moving() ? 0 : calm + 1;
      if (calm >= PHYSICS.calmSteps) return i;
    }
    return maxSteps;
  }

  /** True when some free body is still moving. */
  moving(): boolean {
    for (const o of this.objects.values()) {
      const b = o.body;
      if (!b || !b.isDynamic() || b.isSleeping()) continue;
      const v = b.linvel();
      const w = b.angvel();
      if (Math.hypot(v.x, v.y, v.z) > PHYSICS.restSpeed || Math.hypot(w.x, w.y, w.z) > PHYSICS.restSpin)
        return true;
    }
    return false;
  }

  /** The object's solid parts in world coordinates (open boxes: floor and walls). */
  convexParts(name: string): Convex[] {
    const cached = this.partsCache.get(name);
    if (cached && cached.version === this.version) return cached.parts;
    const parts = this.computeParts(name);
    this.partsCache.set(name, { version: this.version, parts });
    return parts;
  }

  private computeParts(name: string): Convex[] {
    const o = this.get(name);
    const { position, rotation } = this.pose(name);
    const shape = o.spec.shape;
    switch (shape.kind) {
      case "box":
        return [boxConvex(shape.size, position, rotation)];
      case "cylinder":
        return [prismConvex(shape.radius, shape.height, position, rotation)];
      case "open_box":
        return openBoxParts(shape).map((p) =>
          boxConvex(p.size, add(position, rotate(rotation, p.offset)), rotation),
        );
      case "zone":
        return [];
    }
  }

  /** Names of objects that overlap the box (exact test); the table and floor are left to the caller. */
  overlaps(box: QueryBox, exclude: ReadonlySet<string>): string[] {
    const q = boxConvex(box.size, box.position, box.rotation);
    const hits: string[] = [];
    for (const [name, o] of this.objects) {
      if (!o.body || exclude.has(name)) continue;
      if (this.convexParts(name).some((part) => intersects(q, part))) hits.push(name);
    }
    return hits.sort();
  }

  free(): void {
    this.world.free();
  }
}
