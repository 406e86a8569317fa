/**
 * What an HTML page says about itself, read with htmlparser2: title, meta tags, scripts, the URLs it
 * loads resources from, its forms and favicon.
 */
import { Parser } from "htmlparser2";

export interface PageForm {
  action: string;
  method: string;
  hasPassword: boolean;
  hasFileUpload: boolean;
}

export interface Page {
  title: string;
  /** name/property (lower case) → content values. */
  meta: Record<string, string[]>;
  /** Absolute script URLs, in page order. */
  scripts: string[];
  /** Absolute URLs of everything the page loads (scripts, styles, images, frames, form targets). */
  resources: string[];
  /** Of those, the stylesheets, the frames' pages and the forms' targets, by kind. */
  resourcesByKind: Record<ResourceKind, string[]>;
  forms: PageForm[];
  favicon?: string;
}

export type ResourceKind = "stylesheet" | "frame" | "form";

const RESOURCE_ATTRIBUTES: Record<string, string> = {
  script: "src",
  img: "src",
  iframe: "src",
  frame: "src",
  embed: "src",
  source: "src",
  video: "src",
  audio: "src",
  link: "href",
};

function absolute(value: string | undefined, base: string): string | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value.trim(), base);
    return /^https?:$/.test(url.protocol) ? url.href : undefined;
  } catch {
    return undefined;
  }
}

export function parsePage(html: string, url: string): Page {
  const page: Page = {
    title: "",
    meta: {},
    scripts: [],
    resources: [],
    resourcesByKind: { stylesheet: [], frame: [], form: [] },
    forms: [],
  };
  let inTitle = false;
  let titleDone = false;
  let title = "";
  let form: PageForm | undefined;
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (name === "title" && !titleDone) inTitle = true;
        if (name === "meta") {
          const key = (attributes.name ?? attributes.property ?? attributes["http-equiv"])?.toLowerCase();
          if (key && attributes.content !== undefined)
            page.meta[key] = [...(page.meta[key] ?? []), attributes.content];
        }
        const attribute = RESOURCE_ATTRIBUTES[name];
        const resource = attribute ? absolute(attributes[attribute], url) : undefined;
        if (name === "link") {
          const rel = (attributes.rel ?? "").toLowerCase();
          if (/\bicon\b/.test(rel) && resource && !page.favicon) page.favicon = resource;
          if (!/\b(stylesheet|icon|preload|modulepreload|manifest)\b/.test(rel)) return;
          if (/\bstylesheet\b/.test(rel) && resource) page.resourcesByKind.stylesheet.push(resource);
        }
        if (resource) page.resources.push(resource);
        if ((name === "iframe" || name === "frame") && resource) page.resourcesByKind.frame.push(resource);
        if (name === "script" && resource) page.scripts.push(resource);
        if (name === "form") {
          const action = absolute(attributes.action || url, url) ?? url;
          form = {
            action,
            method: (attributes.method ?? "get").toLowerCase(),
            hasPassword: false,
            hasFileUpload: false,
          };
          page.forms.push(form);
          page.resources.push(action);
          page.resourcesByKind.form.push(action);
        }
        if (name === "input") {
          const type = (attributes.type ?? "text").toLowerCase();
          // Inputs outside a form still make a login page (script-driven forms).
          const target = form ?? page.forms.at(-1);
          if (type === "password") {
            if (target) target.hasPassword = true;
            else page.forms.push({ action: url, method: "post", hasPassword: true, hasFileUpload: false });
          }
          if (type === "file" && target) target.hasFileUpload = true;
        }
      },
      ontext(text) {
        if (inTitle) title += text;
      },
      onclosetag(name) {
        if (name === "title" && inTitle) {
          inTitle = false;
          titleDone = true;
        }
        if (name === "form") form = undefined;
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  page.title = title.replace(/\s+/g, " ").trim();
  page.scripts = [...new Set(page.scripts)];
  page.resources = [...new Set(page.resources)];
  return page;
}
