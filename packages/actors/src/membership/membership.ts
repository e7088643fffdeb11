/**
 * The membership protocol: who is in the namespace, joining and leaving at any
 * time, and failure detection by heartbeats.
 *
 * (The protocol's steps, its messages and their check: membership-protocol.ts.)
 *
 * This file runs the protocol: join, leave, heartbeats and the one dispatch
 * of its messages; the form of each message is checked by
 * readMembershipMessage (membership-protocol.ts), the signature and binding
 * of each announcement in announcement-check.ts,
 * name and id claims in claims.ts, the members and failure detection in
 * member-view.ts. See docs/rpc.md.
 * @module
 */
import { randomUuid } from '../platform/crypto.js';
import type { BehaviorSubject, Subject, Subscription } from 'rxjs';
import { defaultCodec, DuplicateWorkerError, hasBeacon, RpcTimeoutError, type BeaconSlot, type Transport, type TransportSubscription } from '@tensorbus/core';
import { errorToWire, waitAtMost } from '@tensorbus/core/internal';
import { decodeWithoutTensors } from '../tensors.js';
import type { WorkerInfo } from '../worker-info.js';
import { BYE, CLAIM, HEARTBEAT, HELLO, HERE, MEMBERSHIP_CONTROL_KINDS, MINE, PING, PONG, QUERY, readMembershipMessage, SYNC, type Announcement } from './membership-protocol.js';
import { BEATS, ID, JOINED, LEFT, SEQ, SHARED_LENGTH, signedText, STATE, type BeatData } from './heartbeat-beat.js';
import { Identity } from '../agent/identity.js';
import type { MembershipFace } from '../agent/agent-host.js';
import type { AgentHost, Departure } from '../agent/host.js';
import type { MembershipTiming } from '../agent/options.js';
import { MEMBERS_SUBJECT } from '../agent/subjects.js';
import { unrefTimer } from '../platform/process.js';
import { MemberView, type Binding, type Departed, type Member } from './member-view.js';
import { authentic } from './announcement-check.js';
import { Claims } from './claims.js';

/** A join waits for its beacon thread to beat (a first start loads the nats client there) at most this long, ms. */
const BEACON_START_LIMIT_MS = 5_000;
/** A transport that does not echo a worker's own announcements delays each join step by at most this, ms. */
const ECHO_LIMIT_MS = 2_000;

/** One worker's view of the group. */
export class Membership implements MembershipFace {
  readonly inst = randomUuid();
  readonly joinedAt = Date.now();
  /** Who is in the group, as this worker sees it (member-view.ts). */
  private readonly view: MemberView;
  /** Current members, this worker included, sorted by id then name. */
  readonly membership$: BehaviorSubject<WorkerInfo[]>;
  /** Fires when a worker leaves or is declared failed. */
  readonly gone$: Subject<Departure>;
  /** Fires when a new instance takes up the name of one that left or failed (a restarted worker). */
  readonly rejoined$: Subject<string>;
  /** This worker's keys. */
  readonly identity = new Identity();
  /** Announcements dropped: malformed, badly signed, replayed, or claiming a name bound to other keys. */
  dropped = 0;
  /** `[SEQ, STATE, ID, BEATS]` of this worker, shared with its beacon thread (heartbeat-beat.ts). */
  // A page without cross-origin isolation has no SharedArrayBuffer (and no beacon thread to share with).
  private readonly shared = new Int32Array(typeof SharedArrayBuffer === 'function' ? new SharedArrayBuffer(SHARED_LENGTH * Int32Array.BYTES_PER_ELEMENT) : new ArrayBuffer(SHARED_LENGTH * Int32Array.BYTES_PER_ELEMENT));
  /** This worker's heartbeats from the transport's beacon thread; undefined without one. */
  private beacon: BeaconSlot | undefined;
  private subscription: TransportSubscription | undefined;
  private statusSubscription: Subscription | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private connected = true;
  private left = false;
  private lastTick = Date.now();
  /** The beacon's count of beats at the last tick: while it moves, the beacon beats for this thread. */
  private beaconBeatsAtTick = 0;
  private awaitedEcho: { kind: Announcement['k']; resolve: () => void } | undefined;

  readonly name: string;
  /** The view's members and departed workers (member-view.ts). */
  private readonly members: Map<string, Member>;
  private readonly departed: Map<string, Departed>;
  private readonly transport: Transport;
  private readonly timing: MembershipTiming;
  private readonly worldSize: number | undefined;
  private readonly rank: number | undefined;
  /** This worker's claims of its name and id (claims.ts). */
  private readonly claims: Claims;

  /** Installed by the membership plugin (plugin.ts). */
  constructor(private readonly host: AgentHost) {
    const { options } = host;
    this.name = host.name;
    this.view = new MemberView(this.name, () => this.left);
    this.members = this.view.members;
    this.departed = this.view.departed;
    this.membership$ = this.view.membership$;
    this.gone$ = this.view.gone$;
    this.rejoined$ = this.view.rejoined$;
    this.transport = host.transport;
    this.timing = options;
    this.worldSize = options.worldSize;
    this.rank = options.rank;
    this.claims = new Claims(
      {
        name: this.name,
        inst: this.inst,
        joinedAt: this.joinedAt,
        holds: () => this.heartbeat !== undefined,
        hasLeft: () => this.left,
        announce: (kind, id) => this.announce(kind, id),
        announceThroughBus: (kind, id) => this.announceThroughBus(kind, id),
        touchSelf: () => this.touch(this.name, this.inst, this.id, this.joinedAt),
      },
      this.view,
      this.worldSize,
      this.rank,
      this.timing.joinSettleMs,
    );
    for (const kind of MEMBERSHIP_CONTROL_KINDS) host.onControl(kind, (raw) => this.onMessage(raw, 'control'));
  }

  // ---- lifecycle (see PluginLifecycle in host.ts) ----

  /** Before listening: the name must be free. */
  beforeListen(): Promise<void> {
    return this.checkNameFree(Math.min(2_000, this.host.options.initTimeoutMs || 2_000));
  }

  /** Once listening: joins. */
  afterListen(): Promise<void> {
    return this.join();
  }

  /** A static group's worker waits for everyone. */
  async whenRunning(): Promise<void> {
    if (this.worldSize !== undefined) await this.claims.awaitWorld(this.host.options.initTimeoutMs);
  }

  /** Leaves as the worker stops. */
  stopping(): void {
    this.leave();
  }

  /** This worker's id (-1 until claimed or numbered). */
  private get id(): number {
    return this.claims.id;
  }

  /** This worker's info (id -1 until a static group without ranks is complete). */
  get self(): WorkerInfo {
    return { name: this.name, id: this.id };
  }

  /** Refuses a name in use: asks the name's control subject before claiming it. */
  async checkNameFree(timeoutMs: number): Promise<void> {
    try {
      await this.host.requestControl(this.name, { k: PING }, timeoutMs);
    } catch (error) {
      if ((error as { code?: string }).code === 'WORKER_UNAVAILABLE' || error instanceof RpcTimeoutError) return;
      throw error;
    }
    throw new DuplicateWorkerError(`worker name '${this.name}' is already in use in this namespace: choose another name`);
  }

  /** Announces this worker, learns the others, resolves its id; the control channel must be listening. */
  async join(): Promise<void> {
    this.subscription = this.transport.subscribe(MEMBERS_SUBJECT, (m) => {
      try {
        this.onMessage(decodeWithoutTensors(m.data), 'members');
      } catch {
        // A malformed announcement is dropped: nothing on the wire may crash a worker.
        this.dropped++;
      }
    });
    this.statusSubscription = this.transport.status$.subscribe((status) => this.onStatus(status));
    this.touch(this.name, this.inst, this.id, this.joinedAt);
    // Calls may come as soon as the others heard the hello, and compute for long before this join
    // ends: the beacon beats before the hello goes out (its first beat an interval later, a hello
    // again until joined). On a loaded machine a first thread takes seconds to start.
    this.startBeacon();
    if (this.beacon) await waitAtMost(this.beacon.ready, BEACON_START_LIMIT_MS);
    await this.announceThroughBus(HELLO);
    await new Promise((resolve) => setTimeout(resolve, this.timing.joinSettleMs));
    // A timer can fire before deliveries already waiting on a busy event loop:
    // one more round trip through the bus takes in everything sent before it.
    await this.announceThroughBus(SYNC);
    if (this.claims.conflict) throw this.claims.conflict;
    if (this.worldSize === undefined) await this.claims.claimId();
    this.claims.resolveStaticIds();
    this.touch(this.name, this.inst, this.id, this.joinedAt);
    this.announce(HEARTBEAT);
    Atomics.store(this.shared, STATE, JOINED);
    this.lastTick = Date.now();
    this.heartbeat = setInterval(() => this.tick(), this.timing.heartbeatMs);
    unrefTimer(this.heartbeat);
  }

  /** The member named `name`, if known and present. */
  get(name: string): WorkerInfo | undefined {
    return this.members.get(name)?.info;
  }

  /** The member with id `id`, if known. */
  byId(id: number): WorkerInfo | undefined {
    for (const member of this.members.values()) if (member.info.id === id) return member.info;
    return undefined;
  }

  /** Why `name` left, if it was a member that left or failed and has not come back. */
  departure(name: string): Departure['reason'] | undefined {
    return this.departed.get(name)?.reason;
  }

  /** The instance id of `name` while it is a member, or of its last instance once it left or failed. */
  instanceOf(name: string): string | undefined {
    return (this.members.get(name) ?? this.departed.get(name))?.inst;
  }

  /**
   * The X25519 key `name` announced (this worker's own for its name), while it
   * is a member or after it was declared failed (the same instance may speak
   * again, and its calls then still show who sent them); undefined for a
   * worker never heard of or one that left.
   */
  dhKeyOf(name: string): string | undefined {
    const member = this.members.get(name);
    if (member) return member.dhKey;
    const departed = this.departed.get(name);
    return departed?.reason === 'failed' ? departed.dhKey : undefined;
  }

  /** The Ed25519 key member `name` announced; undefined for a non-member. */
  signKeyOf(name: string): string | undefined {
    return this.members.get(name)?.signKey;
  }

  /** Signs `text` as this worker (answers other protocols must show came from it). */
  sign(text: string): string {
    return this.identity.sign(text);
  }

  /** True when `signature` is member `name`'s signature of `text`. */
  verifyFrom(name: string, text: string, signature: unknown): boolean {
    const key = this.signKeyOf(name);
    return key !== undefined && this.identity.verify(key, text, signature);
  }

  /** Members now. */
  list(): WorkerInfo[] {
    return this.membership$.value;
  }

  /** Announces departure and stops. */
  leave(): void {
    if (this.left) return;
    this.left = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    // Before the bye takes its number: the beacon sends nothing numbered after it (heartbeat-beat.ts `beat`).
    Atomics.store(this.shared, STATE, LEFT);
    try {
      this.announce(BYE);
    } catch {
      // The transport may already be closed; others then detect the silence.
    }
    this.beacon?.remove();
    this.beacon = undefined;
    this.subscription?.unsubscribe();
    this.statusSubscription?.unsubscribe();
    this.membership$.complete();
    this.gone$.complete();
  }

  /**
   * Announces and waits until the announcement comes back to this worker, so
   * everything the bus delivered to it before has been handled; at most
   * ECHO_LIMIT_MS on a transport that does not echo.
   */
  private async announceThroughBus(kind: typeof HELLO | typeof SYNC | typeof CLAIM, id = this.id): Promise<void> {
    const echoed = new Promise<void>((resolve) => (this.awaitedEcho = { kind, resolve }));
    this.announce(kind, id);
    await waitAtMost(echoed, ECHO_LIMIT_MS);
    this.awaitedEcho = undefined;
  }

  /**
   * Starts this worker's heartbeats on the transport's beacon thread, if it
   * has one. A beacon that cannot start costs nothing: this thread beats anyway.
   */
  private startBeacon(): void {
    if (this.left || this.beacon) return;
    const data: BeatData = { n: this.name, inst: this.inst, t: this.joinedAt, sk: this.identity.signKey, xk: this.identity.dhKey, key: this.identity.signingKey };
    if (!hasBeacon(this.transport)) return;
    try {
      this.beacon = this.transport.startBeacon({
        subject: MEMBERS_SUBJECT,
        intervalMs: this.timing.heartbeatMs,
        builder: new URL('./heartbeat-beat.js', import.meta.url).href,
        data,
        shared: this.shared,
      });
    } catch {
      this.beacon = undefined;
    }
  }

  private announce(kind: typeof HELLO | typeof SYNC | typeof HEARTBEAT | typeof BYE | typeof CLAIM | typeof MINE, id = this.id): void {
    this.transport.publish(MEMBERS_SUBJECT, defaultCodec.encode(this.signed(kind, id)));
  }

  /** This worker's announcement of `kind` (about `id`, its own by default), numbered and signed. */
  private signed(kind: Announcement['k'], id = this.id): Announcement {
    // The beacon's beats carry this worker's own id (-1 while it claims one), never the id a claim is about.
    Atomics.store(this.shared, ID, this.id);
    const message = { k: kind, n: this.name, id, inst: this.inst, t: this.joinedAt, q: Atomics.add(this.shared, SEQ, 1) + 1, sk: this.identity.signKey, xk: this.identity.dhKey } as Announcement;
    message.sig = this.identity.sign(signedText(message));
    return message;
  }

  /**
   * The one dispatch of the protocol's messages, from the members subject or
   * this worker's control subject: checked where they enter
   * (readMembershipMessage; a malformed one is dropped and counted, and a
   * control request is answered with its SerializationError), then handled by
   * their kind. Signed announcements count once authentic (announcement-check.ts).
   */
  private onMessage(raw: unknown, via: 'members' | 'control'): unknown {
    const message = readMembershipMessage(raw);
    if (message instanceof Error) {
      this.dropped++;
      return via === 'control' ? { ok: false, error: errorToWire(message) } : undefined;
    }
    switch (message.k) {
      case PING:
        // Asked of a name's own control subject only (checkNameFree); on the members subject it means nothing.
        if (via === 'control') return { k: PONG, n: this.name, inst: this.inst };
        this.dropped++;
        return undefined;
      case QUERY:
        // Only the status tool asks, and only on its own subjects: a query cannot make every worker publish elsewhere.
        if (!this.left) this.transport.publish(message.reply, defaultCodec.encode(this.signed(HERE)));
        return undefined;
      case BYE:
        if (this.authenticated(message)) this.view.remove(message.n, message.inst, 'left', message.q);
        return undefined;
      case HELLO:
        if (!this.authenticated(message)) return undefined;
        if (message.inst !== this.inst && message.n !== this.name) this.host.sendControl(message.n, this.signed(HERE));
        this.observe(message);
        return undefined;
      case HEARTBEAT:
        // This worker's own beat, echoed: it changes nothing, so it is not worth a signature check.
        if (message.n === this.name && message.inst === this.inst) return undefined;
        if (this.authenticated(message)) this.observe(message);
        return undefined;
      case SYNC:
      case HERE:
      case CLAIM:
      case MINE:
        if (this.authenticated(message)) this.observe(message);
        return undefined;
      default: {
        const _exhaustive: never = message;
        return _exhaustive;
      }
    }
  }

  /**
   * True when `message` counts: this worker has not left, and the message is
   * signed by the keys its name is bound to with a new number; a forgery or
   * replay is dropped and counted, a late beat only marks its sender alive.
   */
  private authenticated(message: Announcement): boolean {
    if (this.left) return false;
    const verdict = authentic(message, this, this.view);
    if (verdict === false) this.dropped++;
    // A beat that the bus delivered after a later one says only that its sender lives.
    return verdict === true;
  }

  private observe(message: Announcement): void {
    if (message.n === this.name && message.inst === this.inst) {
      if (message.k === CLAIM) this.claims.echoed(message.id);
      if (message.k === this.awaitedEcho?.kind) this.awaitedEcho.resolve();
      return;
    }
    if (message.k === SYNC) return;
    if (message.n === this.name) {
      this.claims.onRival(message);
      return;
    }
    if (this.claims.contest(message)) return;
    // A claim is not an id yet (and `mine` from a dynamic claimant neither): it is noted apart, below.
    const tentative = message.k === CLAIM || (message.k === MINE && this.worldSize === undefined);
    this.touch(message.n, message.inst, tentative ? -1 : message.id, message.t, message);
    const member = this.members.get(message.n);
    // A dynamic claimant's `mine` restates its claim (it answers a later claimant): the id stays claimed.
    if (member && member.inst === message.inst) member.claimed = tentative ? message.id : undefined;
    this.claims.resolveStaticIds();
  }

  /** Records that `name` was heard; `from` is the authenticated announcement (absent for this worker itself). */
  private touch(name: string, inst: string, id: number, joinedAt: number, from?: Announcement): void {
    const keys: Binding = from
      ? { inst, signKey: from.sk, dhKey: from.xk, seq: from.q }
      : { inst, signKey: this.identity.signKey, dhKey: this.identity.dhKey, seq: this.ownSeq() };
    this.view.touch(name, inst, id, joinedAt, keys);
  }

  /** The newest sequence number this worker signed (shared with its beacon thread). */
  ownSeq(): number {
    return Atomics.load(this.shared, SEQ);
  }

  private tick(): void {
    if (this.left) return;
    const now = Date.now();
    const stalled = now - this.lastTick > 2 * this.timing.heartbeatMs;
    this.lastTick = now;
    const beaconBeats = Atomics.load(this.shared, BEATS);
    const beaconBeat = beaconBeats !== this.beaconBeatsAtTick;
    this.beaconBeatsAtTick = beaconBeats;
    // Busy is not dead: the beacon beats while this thread computes; this thread beats when it does not.
    if (!beaconBeat) {
      try {
        this.announce(HEARTBEAT);
      } catch {
        return;
      }
    }
    if (!this.connected) return;
    if (stalled) {
      // This worker's own event loop was blocked: the others' silence may be ours.
      this.view.markAllSeen(now);
      return;
    }
    this.view.expireSilent(now, this.timing.failureTimeoutMs);
  }

  private onStatus(status: string): void {
    const wasConnected = this.connected;
    this.connected = status === 'connected';
    if (this.connected && !wasConnected) {
      // Silence while this worker was cut off says nothing about the others.
      this.view.markAllSeen(Date.now());
      this.announce(HEARTBEAT);
    }
  }
}
