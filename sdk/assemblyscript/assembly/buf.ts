// Reading variable-size values: the (buf, cap) rule of docs/abi.md section 2, with one
// scratch buffer that grows when the host reports a longer value, and two key slots that
// strings are encoded into as UTF-8 without allocating.

// lastResult is what the last read returned: the value's length, or -1 NOT_FOUND,
// -2 UNAVAILABLE, -3 FORBIDDEN.
let last: i32 = 0;

/** What the last read returned: the length, or NOT_FOUND/UNAVAILABLE/FORBIDDEN. */
export function lastResult(): i32 {
  return last;
}

/** @internal Sets lastResult (a read answered from the per-call cache). */
export function setLast(n: i32): void {
  last = n;
}

// The pod is the same for every node of a call, but not from one call to the next (any
// instance serves any pod): the runners start a new epoch, and the pod's cached reads
// are dropped.
let epoch: i32 = 0;

/** @internal Starts a new entry-point call. */
export function beginCall(): void {
  epoch++;
}

/** @internal Reads of one call keyed by string (a pod's labels, annotations): a handful of
 * keys, so a linear search that allocates nothing beats a Map. */
export class CallCache {
  epoch: i32 = -1;
  keys: string[] = [];
  vals: Array<string | null> = [];
  codes: i32[] = [];
  hit: i32 = -1;

  /** Whether key was read in this call; its value is then value(). */
  has(key: string): bool {
    if (this.epoch != epoch) {
      this.keys.length = 0;
      this.vals.length = 0;
      this.codes.length = 0;
      this.epoch = epoch;
      return false;
    }
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) {
        this.hit = i;
        last = this.codes[i];
        return true;
      }
    }
    return false;
  }
  value(): string | null {
    return this.vals[this.hit];
  }
  /** Remembers what the read of key (just done) returned. */
  put(key: string, v: string | null): string | null {
    this.keys.push(key);
    this.vals.push(v);
    this.codes.push(last);
    return v;
  }
}

let scratch = new ArrayBuffer(4096);
/** @internal The scratch buffer's address and capacity, read by every host call. */
export let sbuf: usize = changetype<usize>(scratch);
/** @internal */
export let scap: i32 = 4096;

/** @internal Grows the scratch buffer to hold n bytes (it never shrinks). */
export function grow(n: i32): void {
  let c = scap;
  while (c < n) c <<= 1;
  scratch = new ArrayBuffer(c);
  sbuf = changetype<usize>(scratch);
  scap = c;
}

/** @internal Whether the host reported a value longer than the buffer; grows it if so. */
// @ts-ignore: decorator
@inline export function again(n: i32): bool {
  if (n > scap) {
    grow(n);
    return true;
  }
  return false;
}

/** @internal The read's result as text, or null (lastResult says why). */
export function text(n: i32): string | null {
  last = n;
  if (n < 0 || n > scap) return null;
  return String.UTF8.decodeUnsafe(sbuf, <usize>n, false);
}

/** @internal The read's result as bytes (a copy), or null. */
export function bytes(n: i32): Uint8Array | null {
  last = n;
  if (n < 0 || n > scap) return null;
  let out = new Uint8Array(n);
  memory.copy(out.dataStart, sbuf, <usize>n);
  return out;
}

// Key slots: inputs encoded as UTF-8 for the host. Two, for functions that take two
// strings (audit_annotation, get_object).
let slotA = new ArrayBuffer(256);
let slotB = new ArrayBuffer(256);
/** @internal */
export let kp: usize = changetype<usize>(slotA);
/** @internal */
export let vp: usize = changetype<usize>(slotB);

/** @internal Encodes s into slot A (its address in kp) and returns its length. */
export function keyA(s: string): i32 {
  let n = String.UTF8.byteLength(s, false);
  if (n > slotA.byteLength) {
    slotA = new ArrayBuffer(n);
    kp = changetype<usize>(slotA);
  }
  return <i32>String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, kp, false);
}

/** @internal Encodes s into slot B (its address in vp) and returns its length. */
export function keyB(s: string): i32 {
  let n = String.UTF8.byteLength(s, false);
  if (n > slotB.byteLength) {
    slotB = new ArrayBuffer(n);
    vp = changetype<usize>(slotB);
  }
  return <i32>String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, vp, false);
}
