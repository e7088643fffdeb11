/**
 * Fuzzed bodies (mutations of valid calls: bytes flipped, cut, repeated,
 * tags swapped, huge numbers and strings) leave the gateway and the worker
 * up: every body gets an HTTP answer, a fault or a result, and afterwards a
 * real client is served.
 */
import test from 'ava';
import { seededRandom } from '@tensorbus/nats-transport/testing';
import { transportKinds } from './helpers.js';
import { callBody, post, python, workerAndGateway } from './gateway-helpers.js';

const SEEDS = [7, 1234];
const BODIES = 150;

const tensor = `<value><struct><member><name>dtype</name><value>float32</value></member><member><name>shape</name><value><array><data><value><int>2</int></value></data></array></value></member><member><name>data</name><value><base64>AACAPwAAAEA=</base64></value></member></struct></value>`;
const VALID = [
  callBody('w1.gw.echo', '<value><array><data><value><int>1</int></value><value><string>x</string></value></data></array></value>'),
  callBody('w1.gw.scale', tensor, '<value><double>2.5</double></value>'),
  callBody('system.multicall', '<value><array><data><value><struct><member><name>methodName</name><value>w1.gw.echo</value></member><member><name>params</name><value><array><data><value><boolean>1</boolean></value></data></array></value></member></struct></value></data></array></value>'),
  callBody('rref.toHere', '<value>rref-AAAAAAAAAAAAAAAAAAAAAAAA</value>'),
  callBody('w1.gw.Counter', '<value><i4>3</i4></value>'),
];
const PIECES = ['<value>', '</value>', '<struct>', '<member>', '<array><data>', '</data></array>', '<int>', '<double>1e308</double>', '<int>2147483648</int>', '&amp;', '&#0;', '&#x110000;', '<![CDATA[', ']]>', '<!--', '-->', '<?pi x?>', '\u0000', '\uFFFF', '<base64>', '<nil/>', 'ä', '"', "'"];

function mutate(body: string, random: () => number): string {
  const pick = (n: number) => Math.floor(random() * n);
  let out = body;
  for (let k = 1 + pick(4); k > 0; k--) {
    const at = pick(out.length + 1);
    switch (pick(6)) {
      case 0: out = out.slice(0, at); break;
      case 1: out = out.slice(0, at) + PIECES[pick(PIECES.length)]! + out.slice(at); break;
      case 2: out = out.slice(0, at) + out.slice(at + 1 + pick(20)); break;
      case 3: out = out.slice(0, at) + String.fromCharCode(pick(0x3000)) + out.slice(at + 1); break;
      case 4: out = out.slice(0, at) + out.slice(at, at + pick(40)).repeat(2 + pick(50)) + out.slice(at); break;
      default: out = out.slice(0, at) + '9'.repeat(1 + pick(400)) + out.slice(at); break;
    }
  }
  return out;
}

for (const seed of SEEDS) {
  test(`${transportKinds()[0]!.name} - gateway fuzz - ${BODIES} mutated bodies (seed ${seed}) each get an answer; gateway and worker serve on`, async (t) => {
    const { gateway, workers } = await workerAndGateway(t, transportKinds()[0]!, { handleIdleMs: 60_000 });
    const random = seededRandom(seed);
    const statuses = new Map<number, number>();
    for (let i = 0; i < BODIES; i++) {
      const body = mutate(VALID[i % VALID.length]!, random);
      const { status, text } = await post(gateway.url, body);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      t.true(status === 200 && /<methodResponse>/.test(text), `body ${i}: ${status} ${text.slice(0, 200)}`);
    }
    t.deepEqual([...statuses.keys()], [200]);
    t.deepEqual(await python(gateway.url, 'tensor', 'w1'), { dtype: 'float32', shape: [3], values: [2, 4, 6] });
    t.true(workers[0]!.workers().length >= 2, 'the worker still sees the group');
  });
}
