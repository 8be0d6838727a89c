// What an expression reads, found in its syntax tree: a policy buffers a body only when one of its
// expressions names it (`request.body`, `response.body`).
import type { ASTNode } from '@marcbachmann/cel-js';

/**
 * Whether the expression reads `variable.field` (`request.body`, `request["body"]`), or may: the
 * whole variable handed on as a value (`toJson(request)`) counts as reading each of its fields. A
 * call of a custom function (config.customFunctions, `bodies`) reads what its body reads.
 */
export function readsField(
  ast: ASTNode,
  variable: string,
  field: string,
  bodies?: ReadonlyMap<string, ASTNode>,
): boolean {
  // each function's body read once, however many calls reach it (calls can nest and repeat)
  const seen = new Map<string, boolean>();
  const body = (name: unknown) => {
    const b = bodies?.get(name as string);
    if (b === undefined) return false;
    let r = seen.get(name as string);
    if (r === undefined) {
      r = visit(b);
      seen.set(name as string, r);
    }
    return r;
  };
  const visit = (n: ASTNode): boolean => {
    switch (n.op) {
      case 'id':
        // Reached only when not the receiver of a field access (handled below): the whole value.
        return n.args === variable;
      case '.':
      case '.?': {
        const [target, name] = n.args;
        if (target.op === 'id' && target.args === variable) return name === field;
        return visit(target);
      }
      case '[]':
      case '[?]': {
        const [target, key] = n.args;
        if (target.op === 'id' && target.args === variable)
          return key.op === 'value' ? key.args === field : true;
        return visit(target) || visit(key);
      }
      case 'value':
        return false;
      case 'call':
        return n.args[1].some(visit) || body(n.args[0]);
      case 'rcall':
        return visit(n.args[1]) || n.args[2].some(visit) || body(n.args[0]);
      case 'list':
        return n.args.some(visit);
      case 'map':
        return n.args.some(([k, v]) => visit(k) || visit(v));
      case '?:':
        return n.args.some(visit);
      case '!_':
      case '-_':
        return visit(n.args);
      default:
        return (n.args as ASTNode[]).some(visit);
    }
  };
  return visit(ast);
}
