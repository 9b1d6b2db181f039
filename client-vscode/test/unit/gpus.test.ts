import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { findGpu, formatRidges, gpuPickItems, parseGpuList, statusText } from '../../src/gpus';

const raw = [
  { name: 'H100-SXM5-80GB', vendor: 'NVIDIA', aliases: ['h100', 'h100-sxm'], ridges: { fp64: 20.08, fp32: 20.08, fp16: 295.2, int: 14.6 }, sm_count: 132 },
  { name: 'A100-SXM4-80GB', vendor: 'NVIDIA', aliases: ['a100'], ridges: { fp64: 4.8, fp32: 9.6, fp16: 153.0, int: 9.6 } },
  { name: 'MI300X', vendor: 'AMD', fullName: 'AMD Instinct MI300X', aliases: [], ridges: { fp64: 15.3, fp32: 30.6 } },
];

describe('parseGpuList', () => {
  test('keeps name, vendor, aliases and finite ridges', () => {
    const list = parseGpuList([...raw, { vendor: 'x' }, { name: 'Odd', ridges: { fp32: 'big', fp64: Infinity } }]);
    assert.equal(list.length, 4);
    assert.deepEqual(list[0], {
      name: 'H100-SXM5-80GB',
      vendor: 'NVIDIA',
      aliases: ['h100', 'h100-sxm'],
      ridges: { fp64: 20.08, fp32: 20.08, fp16: 295.2, int: 14.6 },
    });
    assert.deepEqual(list[3], { name: 'Odd', vendor: '', aliases: [], ridges: {} });
  });
  test('rejects a non-list and a list of nothing usable with one line', () => {
    assert.throws(() => parseGpuList({ gpus: [] }), /expected a list of GPU profiles/);
    assert.throws(() => parseGpuList(null), /returned null/);
    assert.throws(() => parseGpuList([{ nope: 1 }]), /no usable GPU profile/);
    assert.deepEqual(parseGpuList([]), []);
  });
});

describe('findGpu', () => {
  const list = parseGpuList(raw);
  test('by canonical name or alias, ignoring case and punctuation', () => {
    assert.equal(findGpu(list, 'h100')?.name, 'H100-SXM5-80GB');
    assert.equal(findGpu(list, 'H100_SXM')?.name, 'H100-SXM5-80GB');
    assert.equal(findGpu(list, 'a100-sxm4-80gb')?.name, 'A100-SXM4-80GB');
    assert.equal(findGpu(list, 'mi300x')?.name, 'MI300X');
    assert.equal(findGpu(list, 'v100'), undefined);
    assert.equal(findGpu(list, ''), undefined);
  });
});

describe('quick pick and status bar', () => {
  const list = parseGpuList(raw);
  test('the current target is marked and first; compared GPUs are tagged', () => {
    const items = gpuPickItems(list, 'a100', ['mi300x']);
    assert.deepEqual(items.map((i) => i.gpu.name), ['A100-SXM4-80GB', 'H100-SXM5-80GB', 'MI300X']);
    assert.equal(items[0].label, '$(check) A100-SXM4-80GB');
    assert.equal(items[0].current, true);
    assert.equal(items[1].label, 'H100-SXM5-80GB');
    assert.equal(items[1].description, 'NVIDIA · h100, h100-sxm');
    assert.equal(items[2].description, 'AMD Instinct MI300X · compared');
    assert.equal(items[2].gpu.fullName, 'AMD Instinct MI300X');
    assert.equal(items[0].detail, 'ridge fp64 4.80 · fp32 9.60 · fp16 153 · int 9.60 ops/byte');
  });
  test('an unknown current GPU marks nothing', () => {
    assert.ok(gpuPickItems(list, 'v100').every((i) => !i.current));
  });
  test('formatRidges skips missing precisions', () => {
    assert.equal(formatRidges({ fp32: 30.6, fp64: 15.3 }), 'ridge fp64 15.3 · fp32 30.6 ops/byte');
    assert.equal(formatRidges({}), '');
  });
  test('status shows the canonical name once the server is asked', () => {
    assert.equal(statusText('h100', undefined, true).text, '$(pulse) h100');
    const s = statusText('h100', list, true);
    assert.equal(s.text, '$(pulse) H100-SXM5-80GB');
    assert.match(s.tooltip, /ridge fp64 20.1/);
    assert.match(statusText('v100', list, true).tooltip, /"v100" is not one of the server's GPU profiles/);
    assert.match(statusText('h100', list, false).text, /^\$\(warning\) /);
    assert.equal(statusText('  ', undefined, true).text, '$(pulse) (no GPU)');
  });
});
