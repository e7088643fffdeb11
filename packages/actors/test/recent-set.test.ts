import test from 'ava';
import { RecentSet } from '../src/recent-set.js';

test('recent set - keeps at most its limit of keys, dropping the oldest first', (t) => {
  const set = new RecentSet<string>(3);
  for (const key of ['a', 'b', 'c', 'd', 'e']) set.add(key);
  t.is(set.size, 3);
  t.deepEqual([...set], ['c', 'd', 'e'], 'the newest three, oldest first');
  t.false(set.has('a'));
  t.false(set.has('b'));
  t.true(set.has('e'));
});

test('recent set - a key added again keeps its place: it is not dropped early, nor kept twice', (t) => {
  const set = new RecentSet<string>(3);
  for (const key of ['a', 'b', 'a', 'c']) set.add(key);
  t.deepEqual([...set], ['a', 'b', 'c']);
  set.add('d');
  t.deepEqual([...set], ['b', 'c', 'd'], "'a' was the oldest: it goes first");
  t.false(set.has('a'));
});

test('recent set - stays bounded and exact over many wraps of its ring', (t) => {
  const limit = 1_000;
  const set = new RecentSet<number>(limit);
  for (let i = 0; i < 25 * limit + 7; i++) set.add(i);
  t.is(set.size, limit);
  const kept = [...set];
  t.is(kept.length, limit);
  t.is(kept[0], 24 * limit + 7, 'the oldest kept key');
  t.is(kept[limit - 1], 25 * limit + 6, 'the newest');
  t.true(kept.every((key, i) => i === 0 || key === kept[i - 1]! + 1), 'in the order they were added');
  t.false(set.has(24 * limit + 6));
});

test('recent set - a limit of 0 keeps nothing', (t) => {
  const set = new RecentSet<string>(0);
  set.add('a');
  t.is(set.size, 0);
  t.false(set.has('a'));
});
