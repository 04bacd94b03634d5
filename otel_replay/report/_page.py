"""One self-contained HTML page: the style, the script and the escaping every page shares.

Nothing is fetched: the CSS and the JavaScript are in the page, so a report opens from disk, offline.
Every string from a trace goes through `esc` into the markup, or through `data_script` into a JSON
block the script reads and puts on the page as text (``textContent``, never ``innerHTML``), so model
output holding markup is shown as the text it is.
"""

from __future__ import annotations

from html import escape
from typing import Any

import orjson


def esc(value: object) -> str:
    """``value`` as HTML text, safe in an element and in a quoted attribute."""
    return escape(str(value), quote=True)


def data_script(element_id: str, value: Any) -> str:
    """``value`` as a JSON block the page's script reads (``JSON.parse``): ``<``, ``>`` and ``&`` are
    written as JSON escapes, so no string in it can close the block or open a tag."""
    data = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    for raw, escaped in ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026")):
        data = data.replace(raw, escaped)
    return f'<script type="application/json" id="{esc(element_id)}">{data.decode()}</script>'


def page(title: str, body: str, *, nav: str = "") -> str:
    """A whole page: ``body`` is markup already escaped; ``title`` is escaped here."""
    header = f'<header><span class="brand">agent-replay</span>{nav}</header>' if nav else ""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>"
        f"<body>{header}<main>{body}</main><script>{SCRIPT}</script></body></html>\n"
    )


STYLE = """
:root{--fg:#1d2430;--muted:#6a7383;--line:#dfe3ea;--bg:#fff;--soft:#f5f7fa;--bad:#c62828;
--good:#2e7d32;--warn:#b26a00;--accent:#3559c7;--mark:#fff4d6}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg)}
header{display:flex;gap:1.2em;align-items:center;padding:.6em 1.5em;border-bottom:1px solid var(--line);
background:var(--soft)}
header a{color:var(--accent);text-decoration:none}
.brand{font-weight:700}
main{max-width:1200px;margin:0 auto;padding:1em 1.5em 3em}
h1{font-size:1.5em;margin:.4em 0}
h2{font-size:1.2em;margin:1.6em 0 .5em;padding-bottom:.2em;border-bottom:2px solid var(--line)}
h3{font-size:1em;margin:1.2em 0 .4em}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:var(--soft);border:1px solid var(--line);border-radius:4px;padding:.6em;margin:.3em 0;
white-space:pre-wrap;word-break:break-word;max-height:32em;overflow:auto}
table{border-collapse:collapse;width:100%;margin:.4em 0}
th,td{text-align:left;padding:.3em .5em;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:.9em}
th[data-sort]{cursor:pointer;user-select:none}
.muted{color:var(--muted)}
.banner{padding:.7em 1em;border-radius:6px;margin:.8em 0;border:1px solid var(--line);background:var(--soft)}
.banner.poc{border-color:var(--bad);background:#fdecea}
.banner.ok{border-color:var(--good);background:#edf7ee}
.banner.undecided{border-color:var(--warn);background:#fff6e5}
.banner.settled{border-color:var(--accent);background:#eef2ff}
.badge{display:inline-block;padding:0 .45em;border-radius:3px;font-size:.8em;border:1px solid var(--line);
background:#fff;margin-left:.3em;white-space:nowrap}
.badge.kind{min-width:5.5em;text-align:center;margin:0}
.badge.error,.badge.poc{border-color:var(--bad);color:var(--bad)}
.badge.observed{color:var(--muted)}
.kind-llm{background:#eef2ff}.kind-tool{background:#eefaf0}.kind-retriever{background:#fff7e6}
.steps{list-style:none;padding:0;margin:0}
.step{border:1px solid var(--line);border-radius:5px;margin:.25em 0}
.step>details>summary{display:grid;grid-template-columns:3.2em 7em minmax(8em,1fr) 9em 14em;gap:.5em;
align-items:center;padding:.3em .5em;cursor:pointer;list-style:none}
.step>details>summary::-webkit-details-marker{display:none}
.step.observed{opacity:.62;background:var(--soft)}
.badge.unvaried{color:var(--warn);border-color:var(--warn)}
.step.poc{border:2px solid var(--bad);background:var(--mark)}
.step.root{border:2px dashed var(--bad)}
.badge.root{border-color:var(--bad);color:var(--bad);border-style:dashed}
.step.status-error .name{color:var(--bad)}
.step .body{padding:.3em .8em .8em;border-top:1px solid var(--line)}
.gantt{position:relative;height:.6em;background:var(--soft);border-radius:3px}
.gantt span{position:absolute;top:0;bottom:0;background:var(--accent);border-radius:3px;min-width:2px}
.msg{border-left:3px solid var(--line);padding:.2em .7em;margin:.4em 0}
.msg .role{font-weight:600;font-size:.85em;text-transform:uppercase;color:var(--muted)}
.msg.role-assistant{border-color:var(--accent)}.msg.role-user{border-color:var(--good)}
.msg.role-tool{border-color:var(--warn)}.msg.role-system{border-color:#999}
.msg .text{white-space:pre-wrap;word-break:break-word}
.call{font-family:ui-monospace,monospace;font-size:12.5px;background:var(--soft);padding:.2em .4em;
margin:.2em 0;border-radius:3px;white-space:pre-wrap;word-break:break-word}
.axis{position:relative;height:1.2em;min-width:14em}
.axis .zero{position:absolute;top:0;bottom:0;width:1px;background:#999}
.axis .ci{position:absolute;top:.5em;height:.2em;background:var(--accent)}
.axis .est{position:absolute;top:.25em;width:.7em;height:.7em;margin-left:-.35em;border-radius:50%;
background:var(--accent)}
tr.poc td{background:var(--mark);font-weight:600}
tr.root td{background:#fdecea}
td.causes{white-space:nowrap}
tr.cleared td{color:var(--muted)}
.diff{font-family:ui-monospace,monospace;font-size:12.5px;border:1px solid var(--line);border-radius:4px;
max-height:40em;overflow:auto}
.diff div{white-space:pre-wrap;word-break:break-word;padding:0 .5em}
.diff .add{background:#e6ffec}.diff .del{background:#ffebe9}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:1em}
.filters{display:flex;gap:.6em;margin:.5em 0;align-items:center}
input,select,button{font:inherit;padding:.2em .4em}
dl.config{display:grid;grid-template-columns:12em 1fr;gap:.2em 1em}
dl.config dt{color:var(--muted)}dl.config dd{margin:0}
.tree{list-style:none;padding-left:1.2em;margin:0}
.tree li{margin:.1em 0}
.hidden{display:none}
@media print{header,.filters,button{display:none}main{max-width:none}
.step>details>summary{grid-template-columns:3em 6em 1fr 8em 10em}pre{max-height:none}}
"""

SCRIPT = r"""
(function(){
"use strict";
function el(tag, cls, text){const e=document.createElement(tag);if(cls)e.className=cls;
 if(text!==undefined&&text!==null)e.textContent=String(text);return e;}
const node=document.getElementById("run-data");
let data=null;
function runData(){if(data===null)data=node?JSON.parse(node.textContent):{steps:{},messages:[]};
 return data;}
const LIMIT=100000;
function pretty(value){let t=typeof value==="string"?value:JSON.stringify(value,null,2);
 if(t===undefined)t=String(value);const pre=el("pre","json");
 if(t.length>LIMIT){pre.textContent=t.slice(0,LIMIT);const more=el("button","more",
  "show all "+t.length.toLocaleString()+" characters");
  more.addEventListener("click",()=>{pre.textContent=t;more.remove();});
  const box=el("div");box.append(pre,more);return box;}
 pre.textContent=t;return pre;}
function message(m){const box=el("div","msg role-"+String(m.role).replace(/[^a-z_-]/gi,""));
 box.append(el("div","role",m.role+(m.name?" · "+m.name:"")+(m.id?" · "+m.id:"")));
 if(m.text)box.append(el("div","text",m.text.length>LIMIT?m.text.slice(0,LIMIT)+" …":m.text));
 for(const c of (m.calls||[])){let a=c.arguments;if(typeof a!=="string")a=JSON.stringify(a);
  box.append(el("div","call","→ "+c.name+"("+(a===undefined?"":a)+")"));}
 return box;}
function section(title, parts){const box=el("div","part");box.append(el("h3",null,title));
 for(const p of parts)box.append(p);return box;}
function render(details){const body=details.querySelector(".body");
 if(!body||body.dataset.done)return;body.dataset.done="1";
 const s=runData().steps[details.dataset.step];if(!s)return;const msgs=runData().messages;
 if(s.in_messages){const earlier=s.in_messages.length-s.in_new;
  const shown=s.in_messages.slice(earlier).map(i=>message(msgs[i]));
  const parts=[];if(earlier>0){const b=el("button","history","show the "+earlier+
   " earlier message"+(earlier===1?"":"s"));b.addEventListener("click",()=>{
   const box=el("div","history");for(const i of s.in_messages.slice(0,earlier))box.append(message(msgs[i]));
   b.replaceWith(box);});parts.push(b);}
  body.append(section(s.in_new<s.in_messages.length?"new messages in":"messages in",parts.concat(shown)));}
 if(s.in_rest!==undefined)body.append(section(s.in_messages?"request":"inputs",[pretty(s.in_rest)]));
 if(s.error)body.append(section("error",[pretty(s.error)]));
 if(s.out_messages)body.append(section("output",s.out_messages.map(i=>message(msgs[i]))));
 else if(s.out!==undefined)body.append(section("output",[pretty(s.out)]));}
document.querySelectorAll("details[data-step]").forEach(d=>{
 d.addEventListener("toggle",()=>{if(d.open)render(d);});if(d.open)render(d);});
window.addEventListener("beforeprint",()=>{document.querySelectorAll("details[data-step]")
 .forEach(d=>{if(d.open)render(d);});});
document.querySelectorAll("[data-toggle]").forEach(b=>{b.addEventListener("click",()=>{
 for(const id of b.dataset.toggle.split(" ")){const t=document.getElementById(id);
  if(t)t.classList.toggle("hidden");}});});
document.querySelectorAll("table[data-filter]").forEach(table=>{
 const rows=Array.from(table.tBodies[0].rows);const text=document.getElementById("filter-text");
 const outcome=document.getElementById("filter-outcome");
 function apply(){const q=(text&&text.value||"").toLowerCase();const o=outcome?outcome.value:"";
  let shown=0;for(const r of rows){const ok=(!q||r.dataset.search.includes(q))&&
   (!o||r.dataset.outcome===o);r.classList.toggle("hidden",!ok);if(ok)shown++;}
  const count=document.getElementById("filter-count");if(count)count.textContent=String(shown);}
 if(text)text.addEventListener("input",apply);if(outcome)outcome.addEventListener("change",apply);
 table.querySelectorAll("th[data-sort]").forEach((th,col)=>{th.addEventListener("click",()=>{
  const key=th.dataset.sort;const down=th.dataset.dir!=="down";th.dataset.dir=down?"down":"up";
  const value=r=>r.cells[th.cellIndex].dataset.value??r.cells[th.cellIndex].textContent;
  const num=key==="number";rows.sort((a,b)=>{const x=value(a),y=value(b);
   const c=num?(parseFloat(x)||0)-(parseFloat(y)||0):String(x).localeCompare(String(y));
   return down?-c:c;});for(const r of rows)table.tBodies[0].append(r);});});
 apply();});
})();
"""
