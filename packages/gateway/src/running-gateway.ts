/**
 * What `startGateway` resolves with: the face of a running gateway.
 * @module
 */

/** A running gateway. */
export interface Gateway {
  /** `http(s)://<host>:<port>/RPC2`. */
  readonly url: string;
  readonly port: number;
  /** The gateway's worker name (its `default` identity's agent; others are `<name>-<identity>`). */
  readonly name: string;
  /** True when requests must carry credentials; false means anonymous clients on loopback only. */
  readonly authenticated: boolean;
  /** Worker names of the gateway's agents, one per identity. */
  agentNames(): string[];
  /** RRef handles `client` holds (`basic:<user>`, `jwt:<identity>/<sub>`, `anonymous:<address>`). */
  handleCount(client: string): number;
  /** Stops listening, releases every handle, and stops the agents. */
  close(): Promise<void>;
}
