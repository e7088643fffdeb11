/**
 * The text the RNN example learns: English-like sentences generated from a
 * small grammar with a seeded generator, so every run and every process sees
 * the same corpus. The grammar has what a word language model can pick up in
 * a few epochs: subject–verb agreement across an adjective ("the hungry foxes
 * chase ..."), selectional restrictions (people read books, animals chase
 * animals, nobody eats a poem), prepositions that go with their places, and
 * sentences joined by "and", "but", "because".
 * @module
 */
import { seededRandom } from '../common/random.js';

type Kind = 'animal' | 'person' | 'food' | 'text';

interface Noun {
  sg: string;
  /** Plural form; absent for mass nouns ("bread"), which take no "a". */
  pl?: string;
  mass?: boolean;
  kind: Kind;
}

interface Verb {
  /** Third person singular ("eats") and plural ("eat"). */
  sg: string;
  pl: string;
  /** Kinds that can be its subject. */
  subject: Kind[];
  /** Kinds of its object; none for intransitive verbs. */
  object?: Kind[];
  /** Ditransitive: "gives <object> to <recipient>". */
  recipient?: Kind[];
}

const NOUNS: Noun[] = [
  { sg: 'cat', pl: 'cats', kind: 'animal' },
  { sg: 'dog', pl: 'dogs', kind: 'animal' },
  { sg: 'bird', pl: 'birds', kind: 'animal' },
  { sg: 'horse', pl: 'horses', kind: 'animal' },
  { sg: 'fox', pl: 'foxes', kind: 'animal' },
  { sg: 'mouse', pl: 'mice', kind: 'animal' },
  { sg: 'girl', pl: 'girls', kind: 'person' },
  { sg: 'boy', pl: 'boys', kind: 'person' },
  { sg: 'teacher', pl: 'teachers', kind: 'person' },
  { sg: 'farmer', pl: 'farmers', kind: 'person' },
  { sg: 'child', pl: 'children', kind: 'person' },
  { sg: 'baker', pl: 'bakers', kind: 'person' },
  { sg: 'bread', mass: true, kind: 'food' },
  { sg: 'cheese', mass: true, kind: 'food' },
  { sg: 'fish', mass: true, kind: 'food' },
  { sg: 'pear', pl: 'pears', kind: 'food' },
  { sg: 'cake', pl: 'cakes', kind: 'food' },
  { sg: 'carrot', pl: 'carrots', kind: 'food' },
  { sg: 'book', pl: 'books', kind: 'text' },
  { sg: 'letter', pl: 'letters', kind: 'text' },
  { sg: 'story', pl: 'stories', kind: 'text' },
  { sg: 'poem', pl: 'poems', kind: 'text' },
];

/** Adjectives by kind of noun; none starts with a vowel, so "a" always fits. */
const ADJECTIVES: Record<Kind, string[]> = {
  animal: ['big', 'small', 'brown', 'white', 'hungry', 'young'],
  person: ['wise', 'young', 'happy', 'tired', 'kind', 'clever'],
  food: ['fresh', 'sweet', 'warm'],
  text: ['long', 'short', 'funny', 'new'],
};

const VERBS: Verb[] = [
  { sg: 'sleeps', pl: 'sleep', subject: ['animal', 'person'] },
  { sg: 'runs', pl: 'run', subject: ['animal', 'person'] },
  { sg: 'waits', pl: 'wait', subject: ['animal', 'person'] },
  { sg: 'plays', pl: 'play', subject: ['animal', 'person'] },
  { sg: 'eats', pl: 'eat', subject: ['animal', 'person'], object: ['food'] },
  { sg: 'reads', pl: 'read', subject: ['person'], object: ['text'] },
  { sg: 'writes', pl: 'write', subject: ['person'], object: ['text'] },
  { sg: 'chases', pl: 'chase', subject: ['animal'], object: ['animal'] },
  { sg: 'sees', pl: 'see', subject: ['animal', 'person'], object: ['animal', 'person'] },
  { sg: 'likes', pl: 'like', subject: ['person'], object: ['animal', 'person', 'food', 'text'] },
  { sg: 'gives', pl: 'give', subject: ['person'], object: ['food', 'text'], recipient: ['person', 'animal'] },
];

/** Places, each with the prepositions that go with it. */
const PLACES: Array<{ word: string; preps: string[] }> = [
  { word: 'garden', preps: ['in', 'near'] },
  { word: 'river', preps: ['near', 'by'] },
  { word: 'hill', preps: ['on', 'near'] },
  { word: 'tree', preps: ['under', 'near'] },
  { word: 'market', preps: ['at', 'near'] },
  { word: 'house', preps: ['in', 'near'] },
  { word: 'forest', preps: ['in', 'near'] },
];

const ADVERBS = ['quickly', 'slowly', 'quietly', 'often', 'today'];
const CONJUNCTIONS = ['and', 'but', 'because'];

/** Sentence generator over the grammar. */
class Generator {
  constructor(private readonly random: () => number) {}

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)]!;
  }

  private chance(p: number): boolean {
    return this.random() < p;
  }

  /** A noun phrase of one of `kinds`; returns its words and whether it is plural. */
  private nounPhrase(kinds: Kind[], adjective: number): { words: string[]; plural: boolean } {
    const noun = this.pick(NOUNS.filter((n) => kinds.includes(n.kind)));
    const plural = !noun.mass && this.chance(0.5);
    const det = noun.mass ? this.pick(['the', 'some']) : plural ? this.pick(['the', 'some', 'two', 'many']) : this.pick(['the', 'the', 'a', 'every']);
    const words = [det];
    if (this.chance(adjective)) words.push(this.pick(ADJECTIVES[noun.kind]));
    words.push(plural ? noun.pl! : noun.sg);
    return { words, plural };
  }

  private place(): string[] {
    const place = this.pick(PLACES);
    return [this.pick(place.preps), 'the', place.word];
  }

  /** One clause: subject, verb agreeing with it, what the verb takes, maybe an adverb or a place. */
  clause(): string[] {
    const verb = this.pick(VERBS);
    const subject = this.nounPhrase(verb.subject, 0.35);
    const words = [...subject.words, subject.plural ? verb.pl : verb.sg];
    if (verb.object) words.push(...this.nounPhrase(verb.object, 0.25).words);
    if (verb.recipient) words.push('to', ...this.nounPhrase(verb.recipient, 0.15).words);
    if (!verb.object && this.chance(0.5)) words.push(this.pick(ADVERBS));
    if (!verb.recipient && this.chance(0.4)) words.push(...this.place());
    return words;
  }

  /** A sentence: one clause, or two joined by a conjunction; ends with ".". */
  sentence(): string[] {
    const words = this.clause();
    if (this.chance(0.2)) words.push(this.pick(CONJUNCTIONS), ...this.clause());
    words.push('.');
    return words;
  }
}

/**
 * `count` sentences of the grammar, as one list of words ("." ends each
 * sentence), the same for the same `seed`.
 */
export function generateCorpus(count: number, seed = 2020): string[] {
  const generator = new Generator(seededRandom(seed));
  const words: string[] = [];
  for (let i = 0; i < count; i++) words.push(...generator.sentence());
  return words;
}
