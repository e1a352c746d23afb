// A small JSON parser for args and objects: parseJSON(text) builds a tree of JSONValue.
// It is meant for args (parsed once, in wasmkube_init) and for the occasional object; in
// Filter and Score prefer the accessors (labels, resources), which need no parsing.

export enum JSONKind { Null, Bool, Number, String, Array, Object }

/** One JSON value. */
export class JSONValue {
  kind: JSONKind = JSONKind.Null;
  bool: bool = false;
  num: f64 = 0;
  str: string = "";
  items: JSONValue[] = [];
  keys: string[] = [];
  values: JSONValue[] = [];

  isNull(): bool { return this.kind == JSONKind.Null; }
  isString(): bool { return this.kind == JSONKind.String; }
  isNumber(): bool { return this.kind == JSONKind.Number; }
  isBool(): bool { return this.kind == JSONKind.Bool; }
  isArray(): bool { return this.kind == JSONKind.Array; }
  isObject(): bool { return this.kind == JSONKind.Object; }

  /** The member key of an object, or null. */
  get(key: string): JSONValue | null {
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) return this.values[i];
    }
    return null;
  }
  /** Follows object keys: path(["metadata", "labels", "app"]). */
  path(keys: string[]): JSONValue | null {
    let v: JSONValue | null = this;
    for (let i = 0; i < keys.length && v != null; i++) v = v.get(keys[i]);
    return v;
  }
  /** Whether an object has member key. */
  has(key: string): bool { return this.keys.includes(key); }
}

class Parser {
  pos: i32 = 0;
  ok: bool = true;
  constructor(public s: string) {}

  ws(): void {
    let s = this.s;
    while (this.pos < s.length) {
      let c = s.charCodeAt(this.pos);
      if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
      this.pos++;
    }
  }
  fail(): JSONValue {
    this.ok = false;
    return new JSONValue();
  }
  value(depth: i32): JSONValue {
    if (depth > 64) return this.fail();
    this.ws();
    if (this.pos >= this.s.length) return this.fail();
    let c = this.s.charCodeAt(this.pos);
    let v = new JSONValue();
    if (c == 0x7b) { // {
      v.kind = JSONKind.Object;
      this.pos++;
      this.ws();
      if (this.peek() == 0x7d) { this.pos++; return v; }
      while (this.ok) {
        this.ws();
        if (this.peek() != 0x22) return this.fail();
        let k = this.string();
        this.ws();
        if (this.peek() != 0x3a) return this.fail();
        this.pos++;
        let m = this.value(depth + 1);
        v.keys.push(k);
        v.values.push(m);
        this.ws();
        let d = this.peek();
        this.pos++;
        if (d == 0x7d) return v;
        if (d != 0x2c) return this.fail();
      }
      return v;
    }
    if (c == 0x5b) { // [
      v.kind = JSONKind.Array;
      this.pos++;
      this.ws();
      if (this.peek() == 0x5d) { this.pos++; return v; }
      while (this.ok) {
        v.items.push(this.value(depth + 1));
        this.ws();
        let d = this.peek();
        this.pos++;
        if (d == 0x5d) return v;
        if (d != 0x2c) return this.fail();
      }
      return v;
    }
    if (c == 0x22) {
      v.kind = JSONKind.String;
      v.str = this.string();
      return v;
    }
    if (this.lit("true")) { v.kind = JSONKind.Bool; v.bool = true; return v; }
    if (this.lit("false")) { v.kind = JSONKind.Bool; return v; }
    if (this.lit("null")) return v;
    let start = this.pos;
    while (this.pos < this.s.length) {
      let d = this.s.charCodeAt(this.pos);
      if (!((d >= 0x30 && d <= 0x39) || d == 0x2d || d == 0x2b || d == 0x2e || d == 0x65 || d == 0x45)) break;
      this.pos++;
    }
    if (start == this.pos) return this.fail();
    v.kind = JSONKind.Number;
    v.num = parseFloat(this.s.substring(start, this.pos));
    if (isNaN(v.num)) return this.fail();
    return v;
  }
  peek(): i32 {
    return this.pos < this.s.length ? this.s.charCodeAt(this.pos) : -1;
  }
  lit(w: string): bool {
    if (this.s.substr(this.pos, w.length) == w) {
      this.pos += w.length;
      return true;
    }
    return false;
  }
  string(): string {
    let s = this.s;
    this.pos++; // opening quote
    let out = "";
    let run = this.pos;
    while (this.pos < s.length) {
      let c = s.charCodeAt(this.pos);
      if (c == 0x22) {
        out += s.substring(run, this.pos);
        this.pos++;
        return out;
      }
      if (c != 0x5c) { this.pos++; continue; }
      out += s.substring(run, this.pos);
      let e = s.charCodeAt(this.pos + 1);
      this.pos += 2;
      if (e == 0x75) { // \uXXXX (a surrogate pair is two of them, as UTF-16 wants)
        let h = I32.parseInt(s.substr(this.pos, 4), 16);
        this.pos += 4;
        out += String.fromCharCode(h);
      } else if (e == 0x6e) out += "\n";
      else if (e == 0x74) out += "\t";
      else if (e == 0x72) out += "\r";
      else if (e == 0x62) out += "\b";
      else if (e == 0x66) out += "\f";
      else out += String.fromCharCode(e);
      run = this.pos;
    }
    this.ok = false;
    return out;
  }
}

/** Parses JSON text; null when it is not one well-formed JSON value. */
export function parseJSON(text: string): JSONValue | null {
  let p = new Parser(text);
  let v = p.value(0);
  p.ws();
  if (!p.ok || p.pos != text.length) return null;
  return v;
}
