// The server's GPU profiles (from its `roofline.listGpus` command) turned into what the status
// bar and the quick pick show. Pure: no `vscode` import; the profiles are never duplicated here.

export const PRECISIONS = ['fp64', 'fp32', 'fp16', 'int'] as const;
export type Precision = (typeof PRECISIONS)[number];

export interface GpuInfo {
  readonly name: string;
  readonly vendor: string;
  /** The server's long name, e.g. "NVIDIA Tesla V100 SXM2 32GB", when it gives one. */
  readonly fullName?: string;
  readonly aliases: readonly string[];
  readonly ridges: Readonly<Partial<Record<Precision, number>>>;
}

export interface GpuPickItem {
  readonly label: string;
  readonly description: string;
  readonly detail: string;
  readonly gpu: GpuInfo;
  readonly current: boolean;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Validates the `roofline.listGpus` result; throws a one-line Error if it is not a list of profiles. */
export function parseGpuList(value: unknown): GpuInfo[] {
  if (!Array.isArray(value)) {
    throw new Error(`roofline.listGpus returned ${value === null ? 'null' : typeof value}, expected a list of GPU profiles`);
  }
  const out: GpuInfo[] = [];
  for (const item of value) {
    if (!isRecord(item) || typeof item.name !== 'string' || item.name === '') {
      continue;
    }
    const aliases = Array.isArray(item.aliases) ? item.aliases.filter((a): a is string => typeof a === 'string') : [];
    const ridges: Partial<Record<Precision, number>> = {};
    if (isRecord(item.ridges)) {
      for (const p of PRECISIONS) {
        const r = item.ridges[p];
        if (typeof r === 'number' && Number.isFinite(r)) {
          ridges[p] = r;
        }
      }
    }
    const gpu: GpuInfo = { name: item.name, vendor: typeof item.vendor === 'string' ? item.vendor : '', aliases, ridges };
    out.push(typeof item.fullName === 'string' && item.fullName !== '' ? { ...gpu, fullName: item.fullName } : gpu);
  }
  if (value.length > 0 && out.length === 0) {
    throw new Error('roofline.listGpus returned no usable GPU profile (each needs a "name")');
  }
  return out;
}

function key(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** The profile a setting value names: its canonical name or an alias, ignoring case and punctuation. */
export function findGpu(list: readonly GpuInfo[], name: string): GpuInfo | undefined {
  const k = key(name);
  if (k === '') {
    return undefined;
  }
  return (
    list.find((g) => key(g.name) === k) ?? list.find((g) => g.aliases.some((a) => key(a) === k))
  );
}

function round(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

/** "ridge fp64 16.7 · fp32 33.5 · fp16 ... FLOP/byte" (precisions the server gave, in order). */
export function formatRidges(ridges: GpuInfo['ridges']): string {
  const parts = PRECISIONS.filter((p) => ridges[p] !== undefined).map((p) => `${p} ${round(ridges[p] as number)}`);
  return parts.length > 0 ? `ridge ${parts.join(' · ')} ops/byte` : '';
}

/** Quick-pick entries: every profile, the current target marked and listed first. */
export function gpuPickItems(list: readonly GpuInfo[], current: string, compare: readonly string[] = []): GpuPickItem[] {
  const target = findGpu(list, current);
  const compared = new Set(compare.map((c) => findGpu(list, c)?.name).filter((n): n is string => n !== undefined));
  const items = list.map((gpu): GpuPickItem => {
    const isCurrent = gpu === target;
    const tags = [gpu.fullName ?? gpu.vendor, gpu.aliases.length > 0 ? gpu.aliases.join(', ') : ''].filter(Boolean);
    if (compared.has(gpu.name)) {
      tags.push('compared');
    }
    return {
      label: isCurrent ? `$(check) ${gpu.name}` : gpu.name,
      description: tags.join(' · '),
      detail: formatRidges(gpu.ridges),
      gpu,
      current: isCurrent,
    };
  });
  return [...items.filter((i) => i.current), ...items.filter((i) => !i.current)];
}

export interface StatusText {
  readonly text: string;
  readonly tooltip: string;
}

/** The status-bar entry for the target GPU; `list` is the server's profiles when known. */
export function statusText(current: string, list: readonly GpuInfo[] | undefined, running: boolean): StatusText {
  const gpu = list !== undefined ? findGpu(list, current) : undefined;
  const name = gpu?.name ?? (current.trim() || '(no GPU)');
  if (!running) {
    return {
      text: `$(warning) ${name}`,
      tooltip: `Roofline target GPU: ${name}. The Roofline server is not running; click to choose a GPU or run "Roofline: Show logs".`,
    };
  }
  const lines = [`Roofline target GPU: ${name}`];
  if (gpu !== undefined && formatRidges(gpu.ridges) !== '') {
    lines.push(formatRidges(gpu.ridges));
  } else if (list !== undefined && gpu === undefined) {
    lines.push(`"${current}" is not one of the server's GPU profiles.`);
  }
  lines.push('Click to choose another GPU.');
  return { text: `$(pulse) ${name}`, tooltip: lines.join('\n') };
}
