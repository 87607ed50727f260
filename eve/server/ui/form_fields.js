// The fields of an MCP server's form (an `input.requested` request of kind "form"): one input
// per property of its schema (the spec's restricted schema: strings, numbers, integers,
// booleans, enums and multi-select enums), and the values a person filled in. The session
// checks them again (`form_answer_invalid` names what is wrong).

import { h } from "./dom.js";

function choices(field) {
  if (Array.isArray(field.enum)) return field.enum;
  return (field.oneOf || field.anyOf || []).map((option) => option.const);
}

function input(name, field) {
  if (field.type === "boolean") return h("input", { type: "checkbox", name });
  if (field.type === "array") {
    return h("select", { name, multiple: true },
      choices(field.items || {}).map((value) => h("option", { value }, String(value))));
  }
  const listed = choices(field);
  if (listed.length) return h("select", { name }, listed.map((value) => h("option", { value }, String(value))));
  const numeric = field.type === "integer" || field.type === "number";
  return h("input", { type: numeric ? "number" : "text", name, step: field.type === "integer" ? "1" : numeric ? "any" : null });
}

/** The form's inputs: `{element, values()}`; `values()` skips an optional field left empty. */
export function formFields(schema) {
  const required = new Set((schema && schema.required) || []);
  const fields = Object.entries((schema && schema.properties) || {}).map(([name, field]) => ({
    name, field, input: input(name, field),
  }));
  const element = h("div", { class: "form-fields" }, fields.map(({ name, field, input }) =>
    h("label", {}, `${field.title || name}${required.has(name) ? " *" : ""} `, input)));
  const values = () => {
    const filled = {};
    for (const { name, field, input } of fields) {
      if (field.type === "boolean") filled[name] = input.checked;
      else if (field.type === "array") filled[name] = [...input.selectedOptions].map((option) => option.value);
      else if (input.value === "" && !required.has(name)) continue;
      else if (field.type === "integer" || field.type === "number") filled[name] = Number(input.value);
      else filled[name] = input.value;
    }
    return filled;
  };
  return { element: fields.length ? element : null, values };
}
