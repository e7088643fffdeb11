/**
 * The membership protocol: who is in the namespace, joining and leaving at any
 * time, and failure detection by heartbeats.
 *
 * - join: ping the name's control subject (an answer means the name is taken),
 *   claim it, broadcast `hello`; members answer `here` to the joiner and add
 *   it. The joiner listens for `joinSettleMs` counted from the moment its own
 *   `hello` comes back through the bus, then sends itself a `sync` through the
 *   bus and waits for it (so a slow bus or a busy event loop cannot use up the
 *   window). Two joiners of one name: the greater instance id gives up. A
 *   joiner against a worker that already holds the name: the holder answers
 *   with a heartbeat and the joiner gives up.
 * - ids: a static group's ranks are given or numbered by name; a second
 *   claimant of a taken rank is refused with DuplicateWorkerError (a holder
 *   answers its hello with `mine`; between two joiners the later one, by start
 *   time then instance id, gives up). A dynamic worker claims the smallest id
 *   nobody it knows holds, claims or held. A holder answers a claim of its id
 *   with its heartbeat, and a claimant yields to it. Between claimants of one
 *   id the one that started first keeps it (start time, then instance id: an
 *   order every worker agrees on, unlike the order two claims arrive in, which
 *   NATS may deliver differently to different subscribers); it answers a later
 *   claim with `mine`, and the loser claims again.
 *   An id is final once `join` resolves and never changes.
 * - heartbeats: every worker broadcasts `hb` every `heartbeatMs`; a worker not
 *   heard from for `failureTimeoutMs` is declared failed (while this worker's
 *   own connection is up) and `gone$` fires so pending calls fail fast. Where
 *   the transport has a beacon (NATS), a thread of its own beats too, from
 *   the hello on (heartbeat-beat.ts), so a worker whose main
 *   thread computes for long is not taken for dead; the main thread's beats
 *   go on beside it, numbered from the same shared counter.
 * - leave: broadcast `bye`; members drop the worker at once.
 * - authentication: every announcement carries the sender's public keys, a
 *   sequence number and an Ed25519 signature. The first valid claim of a name
 *   binds its keys; later messages for that name count only when signed by
 *   them with a greater sequence number (a replay or a forgery is dropped and
 *   counted), so a worker is declared gone only by itself or by failure
 *   detection. Values are checked before use: a name that is not a valid
 *   worker name never becomes a subject.
 * See docs/rpc.md.
 * @module
 */
import { randomUuid } from '../platform/crypto.js';
import { BehaviorSubject, Subject, type Subscription } from 'rxjs';
import {
  defaultCodec,
  DuplicateWorkerError,
  InvalidArgumentError,
  RpcTimeoutError,
  type BeaconSlot,
  type Transport,
  type TransportSubscription,
} from '@tensorbus/core';
import { waitAtMost } from '@tensorbus/core/internal';
import { decodeWithoutTensors } from '../tensors.js';
import type { WorkerInfo } from '../worker-info.js';
import { ANNOUNCEMENT_KINDS, BYE, CLAIM, HEARTBEAT, HELLO, HERE, MINE, PING, PONG, QUERY, SYNC, type Announcement } from './membership-protocol.js';
import { ID, JOINED, LEFT, SEQ, SHARED_LENGTH, signedText, STATE, type BeatData, type SignedFields } from './heartbeat-beat.js';
import { Identity, isPublicKey } from '../agent/identity.js';
import { advance, takeLate } from './replay-window.js';
import type { MembershipFace } from '../agent/agent-host.js';
import type { AgentHost, Departure } from '../agent/host.js';
import type { MembershipTiming } from '../agent/options.js';
import { MEMBERS_SUBJECT, STATUS_REPLY_PATTERN } from '../agent/subjects.js';
import { isCount, isInstance, isWorkerId, isWorkerName } from '../agent/wire-checks.js';
import { unrefTimer } from '../platform/process.js';

/** A join waits for its beacon thread to beat (a first start loads the nats client there) at most this long, ms. */
const BEACON_START_LIMIT_MS = 5_000;
/** A transport that does not echo a worker's own announcements delays each join step by at most this, ms. */
const ECHO_LIMIT_MS = 2_000;
/** Members a worker keeps track of at most (a group is far smaller; a flood of names is not). */
const MAX_MEMBERS = 4096;
/** Departed workers remembered (why they left, and their keys against replays); the oldest go first. */
const MAX_DEPARTED = 4096;
/**
 * Claims a dynamic joiner makes before it gives up. Each lost claim excludes
 * its id, and a rival can hold one id per name it binds (at most MAX_MEMBERS),
 * so a hostile peer delays a joiner by a bounded number of rounds, never forever.
 */
const MAX_ID_CLAIMS = 64;

/** The keys a name is bound to, and the newest sequence number heard under them. */
interface Binding {
  inst: string;
  signKey: string;
  dhKey: string;
  seq: number;
}

interface Member extends Binding {
  info: WorkerInfo;
  /** The id this member claims while it joins a dynamic group (not final). */
  claimed?: number;
  joinedAt: number;
  lastSeen: number;
  /** Numbers below `seq` heard already (replay-window.ts). */
  late: number;
}

interface Departed extends Binding {
  reason: Departure['reason'];
  /** Its id: not handed out again while remembered (a worker declared failed may still live). */
  id: number;
}

/** A dynamic joiner's claim of an id, in flight. */
interface Claim {
  id: number;
  /** Its own claim came back through the bus: claims of the id seen from now on came later. */
  echoed: boolean;
  /** Someone holds the id or claimed it first. */
  lost: boolean;
}

/** One worker's view of the group. */
export class Membership implements MembershipFace {
  readonly inst = randomUuid();
  readonly joinedAt = Date.now();
  /** Current members, this worker included, sorted by id then name. */
  readonly membership$ = new BehaviorSubject<WorkerInfo[]>([]);
  /** Fires when a worker leaves or is declared failed. */
  readonly gone$ = new Subject<Departure>();
  /** Fires when a new instance takes up the name of one that left or failed (a restarted worker). */
  readonly rejoined$ = new Subject<string>();
  /** This worker's keys. */
  readonly identity = new Identity();
  /** Announcements dropped: malformed, badly signed, replayed, or claiming a name bound to other keys. */
  dropped = 0;
  private readonly members = new Map<string, Member>();
  private readonly departed = new Map<string, Departed>();
  /** `[SEQ, STATE, ID]` of this worker, shared with its beacon thread (heartbeat-beat.ts). */
  // A page without cross-origin isolation has no SharedArrayBuffer (and no beacon thread to share with).
  private readonly shared = new Int32Array(typeof SharedArrayBuffer === 'function' ? new SharedArrayBuffer(SHARED_LENGTH * Int32Array.BYTES_PER_ELEMENT) : new ArrayBuffer(SHARED_LENGTH * Int32Array.BYTES_PER_ELEMENT));
  /** This worker's heartbeats from the transport's beacon thread; undefined without one. */
  private beacon: BeaconSlot | undefined;
  private id = -1;
  private conflict: DuplicateWorkerError | undefined;
  private subscription: TransportSubscription | undefined;
  private statusSubscription: Subscription | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private connected = true;
  private left = false;
  private lastTick = Date.now();
  private readonly rivals = new Set<string>();
  private readonly rankRivals = new Set<string>();
  private claim: Claim | undefined;
  private onConflict: ((error: DuplicateWorkerError) => void) | undefined;
  private awaitedEcho: { kind: Announcement['k']; resolve: () => void } | undefined;

  readonly name: string;
  private readonly transport: Transport;
  private readonly timing: MembershipTiming;
  private readonly worldSize: number | undefined;
  private readonly rank: number | undefined;

  /** Installed by the membership plugin (plugin.ts). */
  constructor(private readonly host: AgentHost) {
    const { options } = host;
    this.name = host.name;
    this.transport = host.transport;
    this.timing = options;
    this.worldSize = options.worldSize;
    this.rank = options.rank;
    if (this.rank !== undefined) this.id = this.rank;
    host.onControl(PING, () => ({ k: PONG, n: this.name, inst: this.inst }));
    host.onControl(HERE, (m) => {
      if (!this.left) this.accept(m);
    });
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
    if (this.worldSize !== undefined) await this.awaitWorld(this.host.options.initTimeoutMs);
  }

  /** Leaves as the worker stops. */
  stopping(): void {
    this.leave();
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
        this.onAnnouncement(decodeWithoutTensors(m.data) as Announcement);
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
    if (this.conflict) throw this.conflict;
    if (this.worldSize === undefined) await this.claimId();
    this.resolveStaticIds();
    this.touch(this.name, this.inst, this.id, this.joinedAt);
    this.announce(HEARTBEAT);
    Atomics.store(this.shared, STATE, JOINED);
    this.lastTick = Date.now();
    this.heartbeat = setInterval(() => this.tick(), this.timing.heartbeatMs);
    unrefTimer(this.heartbeat);
  }

  /** Resolves once `worldSize` workers with ids have joined, or rejects after `timeoutMs`. */
  awaitWorld(timeoutMs: number): Promise<WorkerInfo[]> {
    const size = this.worldSize!;
    return new Promise((resolve, reject) => {
      const stop = () => {
        if (timer) clearTimeout(timer);
        this.onConflict = undefined;
        queueMicrotask(() => subscription.unsubscribe());
      };
      if (this.conflict) return reject(this.conflict);
      // A holder of this rank that answers late still refuses this worker.
      this.onConflict = (error) => {
        stop();
        reject(error);
      };
      const timer = timeoutMs > 0 ? setTimeout(() => {
        this.onConflict = undefined;
        subscription.unsubscribe();
        const missing = size - this.members.size;
        reject(new RpcTimeoutError(`static group of ${size} did not form within ${timeoutMs} ms: ${missing} worker(s) missing; present: ${[...this.members.keys()].join(', ')}`));
      }, timeoutMs) : undefined;
      const subscription = this.membership$.subscribe((list) => {
        if (isCompleteWorld(list, size)) {
          stop();
          resolve(list);
        }
      });
    });
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
    try {
      this.beacon = this.transport.startBeacon?.({
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

  private onAnnouncement(message: Announcement): void {
    if (this.left) return;
    if (typeof message === 'object' && message !== null && message.k === QUERY) {
      // Only the status tool asks, and only on its own subjects: a query cannot make every worker publish elsewhere.
      if (typeof message.reply === 'string' && STATUS_REPLY_PATTERN.test(message.reply)) {
        this.transport.publish(message.reply, defaultCodec.encode(this.signed(HERE)));
      } else {
        this.dropped++;
      }
      return;
    }
    this.accept(message);
  }

  /** Checks an announcement's form, signature and binding; handles it, or drops and counts it. */
  private accept(raw: unknown): void {
    const message = raw as Announcement;
    const verdict = this.authentic(message);
    if (verdict === false) {
      this.dropped++;
      return;
    }
    // A beat that the bus delivered after a later one says only that its sender lives.
    if (verdict === 'late') return;
    if (message.k === BYE) {
      this.remove(message.n, message.inst, 'left', message.q);
      return;
    }
    if (message.k === HELLO && message.inst !== this.inst && message.n !== this.name) {
      this.host.sendControl(message.n, this.signed(HERE));
    }
    this.observe(message);
  }

  /**
   * True when `m` is well formed, signed by the keys it carries, and those are
   * the keys its name is bound to (a name not bound yet, or bound to an
   * instance that has gone, binds them now), with a sequence number above
   * every one heard from that instance; or `'late'` for a member's `hb` or
   * `hello` not heard yet, with a number a little below the newest (its
   * beacon's and its main thread's beats travel on two connections), after
   * marking it heard and the member seen.
   */
  private authentic(m: Announcement): boolean | 'late' {
    if (typeof m !== 'object' || m === null || !ANNOUNCEMENT_KINDS.has(m.k) || !isWorkerName(m.n) || !isInstance(m.inst) || !isWorkerId(m.id)) return false;
    if (typeof m.t !== 'number' || !Number.isFinite(m.t) || !isCount(m.q) || !isPublicKey(m.sk) || !isPublicKey(m.xk)) return false;
    if (!this.identity.verify(m.sk, signedText(m), m.sig)) return false;
    if (m.n === this.name) {
      // This worker's own echo, or a rival for its name (the name-claim protocol decides).
      return m.inst !== this.inst || (m.sk === this.identity.signKey && m.q <= Atomics.load(this.shared, SEQ));
    }
    const bound: Binding | undefined = this.members.get(m.n) ?? this.departed.get(m.n);
    if (bound === undefined || bound.inst !== m.inst) {
      // A live member's name claimed by another instance: the member keeps it until it leaves or fails.
      // New names beyond MAX_MEMBERS are not taken in: announcements alone cannot grow this worker's state without bound.
      return !this.members.has(m.n) && m.k !== BYE && this.members.size < MAX_MEMBERS;
    }
    if (m.sk !== bound.signKey || m.xk !== bound.dhKey) return false;
    if (m.q > bound.seq) return true;
    // Only a live member: a worker that said bye (or was declared failed) is not brought back by an older beat.
    const member = this.members.get(m.n);
    if (member !== bound || (m.k !== HEARTBEAT && m.k !== HELLO)) return false;
    const late = takeLate(member.seq, member.late, m.q);
    if (late === undefined) return false;
    member.late = late;
    member.lastSeen = Date.now();
    return 'late';
  }

  private observe(message: Announcement): void {
    if (message.n === this.name && message.inst === this.inst) {
      if (message.k === CLAIM && this.claim?.id === message.id) this.claim.echoed = true;
      if (message.k === this.awaitedEcho?.kind) this.awaitedEcho.resolve();
      return;
    }
    if (message.k === SYNC) return;
    if (message.n === this.name) {
      this.onRival(message);
      return;
    }
    if (this.contest(message)) return;
    // A claim is not an id yet (and `mine` from a dynamic claimant neither): it is noted apart, below.
    const tentative = message.k === CLAIM || (message.k === MINE && this.worldSize === undefined);
    this.touch(message.n, message.inst, tentative ? -1 : message.id, message.t, message);
    const member = this.members.get(message.n);
    // A dynamic claimant's `mine` restates its claim (it answers a later claimant): the id stays claimed.
    if (member && member.inst === message.inst) member.claimed = tentative ? message.id : undefined;
    this.resolveStaticIds();
  }

  /**
   * Another worker's announcement names the id this worker holds or claims.
   * Returns true when the announcement must not enter this worker's view (a
   * rival for a rank this worker keeps).
   */
  private contest(message: Announcement): boolean {
    if (message.id < 0) return false;
    if (this.worldSize === undefined) {
      const claim = this.claim;
      if (claim && !claim.lost && message.id === claim.id) {
        if (message.k === CLAIM || message.k === MINE) {
          // Another claimant of the id. Two workers may see two claims in opposite orders, so who
          // keeps the id is decided by an order they all agree on: the one that started first.
          if (!this.startedBefore(message)) claim.lost = true;
          // Tell a later claimant (it may not have heard ours).
          else if (message.k === CLAIM) this.announce(MINE, claim.id);
        } else {
          // A holder (its heartbeat, its `here`).
          claim.lost = true;
        }
      } else if (this.heartbeat && message.id === this.id && message.k === CLAIM) {
        // A holder answers as a holder: its heartbeat, which every claimant yields to.
        this.announce(HEARTBEAT);
      }
      return false;
    }
    if (this.rank === undefined || message.id !== this.id) return false;
    if (this.heartbeat && !this.conflict) {
      // A `mine` answers a hello: its sender held the rank when this worker said hello.
      if (message.k !== MINE) {
        if (message.k === HELLO) this.announce(MINE);
        return true;
      }
    }
    const holder = message.k === HEARTBEAT || message.k === MINE;
    // Between two joiners the later one gives up (start time, then instance id): a claimant that came first keeps its rank.
    const later = !this.startedBefore(message);
    if (holder || later) {
      if (!this.conflict) {
        this.conflict = new DuplicateWorkerError(
          `rank ${this.id} of the static group of ${this.worldSize} is already taken by worker '${message.n}': give each worker its own rank`,
        );
        this.onConflict?.(this.conflict);
      }
      return false;
    }
    if (!this.rankRivals.has(message.inst)) {
      // The rival may have subscribed too late to hear this worker's hello.
      this.rankRivals.add(message.inst);
      this.announce(HELLO);
    }
    return true;
  }

  /** True when this worker started before the sender of `message` (start time, then instance id: every worker orders two the same way). */
  private startedBefore(message: Announcement): boolean {
    return this.joinedAt < message.t || (this.joinedAt === message.t && this.inst < message.inst);
  }

  /**
   * Claims the smallest id this worker knows nobody holds, claims or held,
   * until a claim stands: it came back through the bus with no earlier claim
   * or holder of that id, and no `mine` followed within the settle time.
   */
  private async claimId(): Promise<void> {
    const lost = new Set<number>();
    for (let attempt = 0; attempt < MAX_ID_CLAIMS; attempt++) {
      const claim: Claim = { id: this.freeId(lost), echoed: false, lost: false };
      this.claim = claim;
      await this.announceThroughBus(CLAIM, claim.id);
      claim.echoed = true;
      if (!claim.lost) {
        await new Promise((resolve) => setTimeout(resolve, this.timing.joinSettleMs));
        await this.announceThroughBus(SYNC);
      }
      if (!claim.lost && !this.left) {
        // Final before anything else can run: from here on this worker defends the id as its holder.
        this.id = claim.id;
        this.claim = undefined;
        return;
      }
      this.claim = undefined;
      if (this.left) throw new DuplicateWorkerError(`worker '${this.name}' left while it was getting an id`);
      lost.add(claim.id);
    }
    throw new RpcTimeoutError(`worker '${this.name}' could not get an id: ${MAX_ID_CLAIMS} claims were taken by others`);
  }

  /**
   * Another instance claims this worker's name. A holder (joined, heart
   * beating) keeps it and answers with a heartbeat, which a joiner takes as a
   * refusal. Between two joiners the greater instance id gives up; the lesser
   * says hello again, in case the other subscribed too late to hear it.
   */
  private onRival(message: Announcement): void {
    if (this.heartbeat) {
      if (message.k === HELLO) this.announce(HEARTBEAT);
      return;
    }
    const holder = message.k === HEARTBEAT || message.k === HERE;
    if (holder || this.inst > message.inst) {
      this.conflict ??= new DuplicateWorkerError(`worker name '${this.name}' was claimed by another worker at the same time: choose another name`);
    } else if (!this.rivals.has(message.inst)) {
      this.rivals.add(message.inst);
      this.announce(HELLO);
    }
  }

  /** Records that `name` was heard; `from` is the authenticated announcement (absent for this worker itself). */
  private touch(name: string, inst: string, id: number, joinedAt: number, from?: Announcement): void {
    const existing = this.members.get(name);
    // A static worker numbered by name announces -1 until it has counted everyone.
    // A final id never changes: an announcement of another one by the same instance is not taken in.
    if (existing && existing.inst === inst && existing.info.id >= 0) id = existing.info.id;
    const earlier = this.departed.get(name)?.inst;
    this.departed.delete(name);
    const keys: Binding = from
      ? { inst, signKey: from.sk, dhKey: from.xk, seq: from.q }
      : { inst, signKey: this.identity.signKey, dhKey: this.identity.dhKey, seq: Atomics.load(this.shared, SEQ) };
    const late = existing && existing.inst === inst ? advance(existing.seq, existing.late, keys.seq) : 0;
    if (existing && existing.inst === inst && existing.info.id === id) {
      existing.lastSeen = Date.now();
      existing.late = late;
      existing.seq = keys.seq;
      return;
    }
    this.members.set(name, { ...keys, info: { name, id }, joinedAt, lastSeen: Date.now(), late });
    if (earlier !== undefined && earlier !== inst) this.rejoined$.next(name);
    this.publishView();
  }

  private remove(name: string, inst: string | undefined, reason: Departure['reason'], seq?: number): void {
    const member = this.members.get(name);
    if (!member || name === this.name || (inst !== undefined && member.inst !== inst)) return;
    this.members.delete(name);
    if (this.departed.size >= MAX_DEPARTED) this.departed.delete(this.departed.keys().next().value!);
    this.departed.set(name, { reason, id: member.info.id, inst: member.inst, signKey: member.signKey, dhKey: member.dhKey, seq: Math.max(member.seq, seq ?? 0) });
    this.publishView();
    this.gone$.next({ name, reason });
  }

  /** The smallest id not held or claimed by a member, not held by a remembered departed worker, and not in `excluded`. */
  private freeId(excluded: Set<number>): number {
    const taken = new Set(excluded);
    for (const [name, member] of this.members) {
      if (name === this.name) continue;
      if (member.info.id >= 0) taken.add(member.info.id);
      if (member.claimed !== undefined) taken.add(member.claimed);
    }
    for (const departed of this.departed.values()) if (departed.id >= 0) taken.add(departed.id);
    let id = 0;
    while (taken.has(id)) id++;
    return id;
  }

  /** A static group without explicit ranks numbers its workers by name once complete. */
  private resolveStaticIds(): void {
    if (this.worldSize === undefined || this.id >= 0 || this.members.size < this.worldSize) return;
    const names = [...this.members.keys()].sort();
    this.id = names.indexOf(this.name);
    if (this.id >= this.worldSize) {
      throw new InvalidArgumentError(`more than worldSize=${this.worldSize} workers joined this namespace`);
    }
    this.touch(this.name, this.inst, this.id, this.joinedAt);
    if (this.heartbeat) this.announce(HEARTBEAT);
    for (const [name, member] of this.members) {
      if (member.info.id < 0) member.info = { name, id: names.indexOf(name) };
    }
    this.publishView();
  }

  private tick(): void {
    if (this.left) return;
    const now = Date.now();
    const stalled = now - this.lastTick > 2 * this.timing.heartbeatMs;
    this.lastTick = now;
    try {
      this.announce(HEARTBEAT);
    } catch {
      return;
    }
    if (!this.connected) return;
    if (stalled) {
      // This worker's own event loop was blocked: the others' silence may be ours.
      for (const member of this.members.values()) member.lastSeen = now;
      return;
    }
    for (const [name, member] of this.members) {
      if (name !== this.name && now - member.lastSeen > this.timing.failureTimeoutMs) this.remove(name, member.inst, 'failed');
    }
  }

  private onStatus(status: string): void {
    const wasConnected = this.connected;
    this.connected = status === 'connected';
    if (this.connected && !wasConnected) {
      // Silence while this worker was cut off says nothing about the others.
      const now = Date.now();
      for (const member of this.members.values()) member.lastSeen = now;
      this.announce(HEARTBEAT);
    }
  }

  private publishView(): void {
    if (this.left) return;
    const list = [...this.members.values()]
      .map((m) => m.info)
      .sort((a, b) => a.id - b.id || (a.name < b.name ? -1 : 1));
    this.membership$.next(list);
  }
}

/** True when each rank 0..size-1 is held by exactly one worker and every worker has a rank. */
function isCompleteWorld(list: WorkerInfo[], size: number): boolean {
  if (list.length !== size) return false;
  const ranks = new Set(list.map((w) => w.id));
  return ranks.size === size && list.every((w) => w.id >= 0 && w.id < size);
}
