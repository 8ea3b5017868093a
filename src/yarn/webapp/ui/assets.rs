//! The UI's one stylesheet and one script, served by the app itself (no CDN, nothing
//! fetched from elsewhere).
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

/// `/static/sparkyard.css`.
pub const CSS: &str = r#"
:root{--ink:#1f2933;--muted:#616e7c;--line:#e4e7eb;--bg:#f5f7fa;--accent:#e25a1c;--head:#243b53}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--ink);background:var(--bg)}
a{color:#1c5d99;text-decoration:none}a:hover{text-decoration:underline}
header.top{display:flex;align-items:center;gap:18px;background:var(--head);color:#fff;padding:0 20px;height:48px}
header.top .brand{color:#fff;font-size:19px;letter-spacing:.3px}header.top .brand b{color:#ff8a4c}
header.top .what{color:#9fb3c8;font-size:12px;text-transform:uppercase;letter-spacing:1px}
header.top nav{display:flex;gap:4px;margin-left:16px}
header.top nav a{color:#d9e2ec;padding:6px 12px;border-radius:4px}
header.top nav a.current,header.top nav a:hover{background:#334e68;color:#fff;text-decoration:none}
header.top .viewer{margin-left:auto;color:#9fb3c8;font-size:12px}
nav.states{background:#fff;border-bottom:1px solid var(--line);padding:6px 20px;display:flex;gap:14px;font-size:12px}
nav.states a{color:var(--muted)}
main{padding:16px 20px 28px;max-width:1480px}
h1{font-size:20px;margin:4px 0 14px;font-weight:600}
h2{font-size:15px;margin:22px 0 8px;font-weight:600;color:var(--head)}
section.card{background:#fff;border:1px solid var(--line);border-radius:6px;padding:12px 16px;margin-bottom:14px}
section.card>h2{margin-top:0}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:10px;margin-bottom:14px}
.metric{background:#fff;border:1px solid var(--line);border-radius:6px;padding:10px 14px}
.metric .v{font-size:22px;font-weight:600;color:var(--head)}.metric .k{font-size:12px;color:var(--muted)}
table.grid{width:100%;border-collapse:collapse;background:#fff;font-size:13px}
table.grid th{text-align:left;font-weight:600;color:var(--muted);border-bottom:2px solid var(--line);padding:6px 8px;white-space:nowrap;font-size:12px}
table.grid td{border-bottom:1px solid var(--line);padding:5px 8px;vertical-align:top}
table.grid tbody tr:hover{background:#f0f4f8}
td code,dd code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.empty{color:var(--muted);font-style:italic}
.nowrap{white-space:nowrap}
details.long summary{cursor:pointer;color:var(--muted)}details.long code{display:block;white-space:pre-wrap;margin-top:4px}
dl.info{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:0}
dl.info dt{color:var(--muted)}dl.info dd{margin:0}
.badge{display:inline-block;padding:1px 7px;border-radius:10px;font-size:11px;font-weight:600;background:#e4e7eb;color:#3e4c59}
.s-running,.s-accepted,.s-submitted{background:#dceefb;color:#0b4f8a}
.s-finished,.s-succeeded,.s-success,.s-complete{background:#e3f9e5;color:#1f6b2a}
.s-failed,.s-lost{background:#ffe3e3;color:#a61b1b}
.s-killed,.s-decommissioned,.s-decommissioning{background:#fff3c4;color:#8d5b00}
.s-kill,.s-failure,.s-escalation,.s-attempt-failed,.s-executor-lost,.s-removed{background:#ffe3e3;color:#a61b1b}
.s-restart,.s-active{background:#e3f9e5;color:#1f6b2a}.s-partition{background:#dceefb;color:#0b4f8a}
.meter{display:inline-block;width:90px;height:8px;background:#e4e7eb;border-radius:4px;vertical-align:middle;overflow:hidden}
.meter .fill{display:block;height:100%;background:var(--accent)}
.meter-text{font-size:12px;color:var(--muted)}
tr.actor td.path{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;white-space:nowrap}
tr.actor.restarted{background:#fffbea}tr.actor.failed td.path{color:#a61b1b}
tr.actor.ended td{color:var(--muted)}
.flag{font-size:11px;font-weight:600;border-radius:3px;padding:0 5px;margin-left:4px}
.flag.restart{background:#e3f9e5;color:#1f6b2a}.flag.failure{background:#ffe3e3;color:#a61b1b}
.timeline-wrap{overflow-x:auto;background:#fff;border:1px solid var(--line);border-radius:6px;padding:6px}
.timeline-wrap svg{max-width:100%;height:auto;display:block}
.live{font-size:12px;color:#1f6b2a;margin-left:8px}.live::before{content:"\25CF  "}
.problem{background:#fff;border:1px solid #f5c2c2;border-left:4px solid #d64545;border-radius:6px;padding:14px 18px;font-size:15px}
footer{color:var(--muted);font-size:12px;padding:8px 20px 20px}
"#;

/// `/static/sparkyard.js`: keeps a running application's page current. An element with
/// `data-refresh="<url>"` and `data-final="false"` is replaced by the fragment at that URL
/// every two seconds, until a fragment says `data-final="true"`.
pub const JS: &str = r#"
(function () {
  var PERIOD = 2000;
  function poll() {
    var el = document.querySelector('[data-refresh][data-final="false"]');
    if (!el) { return; }
    var url = el.getAttribute('data-refresh');
    fetch(url, { credentials: 'same-origin', cache: 'no-store' })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var box = document.createElement('div');
        box.innerHTML = html;
        var fresh = box.firstElementChild;
        if (fresh && fresh.id === el.id) { el.replaceWith(fresh); }
      })
      .catch(function () {})
      .then(function () { setTimeout(poll, PERIOD); });
  }
  document.addEventListener('DOMContentLoaded', function () { setTimeout(poll, PERIOD); });
})();
"#;
