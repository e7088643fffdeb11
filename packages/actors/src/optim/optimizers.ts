/**
 * The optimizers a {@link DistributedOptimizer} can run, keyed by name, each
 * made from the options TensorFlow.js's `tf.train.*` takes.
 * @module
 */
import { InvalidArgumentError, tf } from '@tensorbus/core';

/** Names of the built-in optimizers. */
export type OptimizerName = 'sgd' | 'momentum' | 'adam' | 'adagrad' | 'adadelta' | 'adamax' | 'rmsprop';

/**
 * Options of an optimizer, as `tf.train.*` takes them (each optimizer reads
 * the ones it has; missing ones take TensorFlow.js's defaults).
 */
export interface OptimizerOptions {
  learningRate?: number;
  /** momentum, rmsprop */
  momentum?: number;
  /** momentum */
  useNesterov?: boolean;
  /** adam, adamax */
  beta1?: number;
  /** adam, adamax */
  beta2?: number;
  /** adam, adadelta, adamax, rmsprop */
  epsilon?: number;
  /** adagrad */
  initialAccumulatorValue?: number;
  /** adadelta */
  rho?: number;
  /** adamax, rmsprop */
  decay?: number;
  /** rmsprop */
  centered?: boolean;
}

type Factory = (options: OptimizerOptions) => tf.Optimizer;

function required(name: string, options: OptimizerOptions, key: 'learningRate' | 'momentum'): number {
  const value = options[key];
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidArgumentError(`optimizer '${name}' needs a numeric option '${key}'`);
  }
  return value;
}

const factories = new Map<string, Factory>([
  ['sgd', (o) => tf.train.sgd(required('sgd', o, 'learningRate'))],
  ['momentum', (o) => tf.train.momentum(required('momentum', o, 'learningRate'), required('momentum', o, 'momentum'), o.useNesterov)],
  ['adam', (o) => tf.train.adam(o.learningRate, o.beta1, o.beta2, o.epsilon)],
  ['adagrad', (o) => tf.train.adagrad(required('adagrad', o, 'learningRate'), o.initialAccumulatorValue)],
  ['adadelta', (o) => tf.train.adadelta(o.learningRate, o.rho, o.epsilon)],
  ['adamax', (o) => tf.train.adamax(o.learningRate, o.beta1, o.beta2, o.epsilon, o.decay)],
  ['rmsprop', (o) => tf.train.rmsprop(required('rmsprop', o, 'learningRate'), o.decay, o.momentum, o.epsilon, o.centered)],
]);

/**
 * A new TensorFlow.js optimizer named `name`.
 * @throws InvalidArgumentError for an unknown name or a missing required option.
 */
export function makeOptimizer(name: string, options: OptimizerOptions = {}): tf.Optimizer {
  const factory = typeof name === 'string' ? factories.get(name) : undefined;
  if (!factory) throw new InvalidArgumentError(`unknown optimizer ${JSON.stringify(name)}: use one of ${[...factories.keys()].join(', ')}`);
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('optimizer options must be an object');
  return factory(options);
}

/** Throws like {@link makeOptimizer} would, without keeping an optimizer. */
export function checkOptimizer(name: string, options: OptimizerOptions = {}): void {
  makeOptimizer(name, options).dispose();
}
