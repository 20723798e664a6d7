# frozen_string_literal: true

module LeaseMachines
  class Web
    # The dashboard's stylesheet and script, inlined into every page under the response's nonce (no asset pipeline,
    # no framework). The script reads only data- attributes and JSON it fetches from the app, and writes only
    # textContent and elements it creates, so no value it handles is ever parsed as markup; the one markup it parses
    # is the app's own timeline SVG, which the server escaped.
    module Assets
      STYLE = <<~CSS
        body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 72rem; padding: 0 1rem 3rem;
               color: #1d2329; }
        header { display: flex; flex-wrap: wrap; gap: .5rem 2rem; align-items: baseline;
                 border-bottom: 1px solid #d5dbe1; }
        header nav a { margin-right: 1rem; font-weight: 600; }
        a { color: #1559a8; }
        code { font-size: 90%; }
        .database { color: #56616b; }
        table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
        th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #e6eaee; vertical-align: top; }
        th { font-weight: 600; background: #f3f5f7; }
        td[data-field="resource"], td.resource { word-break: break-all; }
        tr.state-held td[data-field="state"] { color: #13794a; font-weight: 600; }
        tr.state-expiring td[data-field="state"] { color: #a05a00; font-weight: 600; }
        tr.state-free td { color: #6b7680; }
        tr.kind-write_refused, tr.kind-refused { background: #fdf0f0; }
        tr.kind-revoked { background: #fff6e6; }
        .filter { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin: 1rem 0 .5rem; }
        .filter input { font: inherit; padding: .2rem .4rem; }
        .pages a { margin-right: 1rem; }
        .live-status { color: #6b7680; font-size: 90%; }
        .flash { padding: .5rem .75rem; background: #eef6ee; border: 1px solid #b8d8b8; }
        .flash.refused { background: #fdf0f0; border-color: #e3b5b5; }
        .timeline svg { width: 100%; height: auto; border: 1px solid #e6eaee; background: #fff; }
        .finding { background: #fdf0f0; }
        .valid { color: #13794a; font-weight: 600; }
        form.revoke button { font: inherit; color: #8a1c1c; }
      CSS

      SCRIPT = <<~JS
        (function () {
          "use strict";
          var offset = 0; // the store's clock minus this browser's, seconds
          var first = document.querySelector("table.rows");
          if (first) offset = parseFloat(first.dataset.now) - Date.now() / 1000;

          function pad(n) { return (n < 10 ? "0" : "") + n; }
          function duration(s) { // as View.duration writes it
            var t = Math.round(s * 10), w = Math.floor(t / 10);
            var min = pad(Math.floor(w % 3600 / 60));
            if (t < 600) return w + "." + (t % 10) + " s";
            if (t < 36000) return Math.floor(t / 600) + " min " + pad(w % 60) + "." + (t % 10) + " s";
            if (w < 86400) return Math.floor(w / 3600) + " h " + min + " min " + pad(w % 60) + " s";
            return Math.floor(w / 86400) + " d " + pad(Math.floor(w % 86400 / 3600)) + " h " + min + " min";
          }
          function text(value) { return value === null || value === undefined ? "\\u2014" : String(value); }
          function cell(tr, field) { return tr.querySelector('[data-field="' + field + '"]'); }

          function tick() {
            var now = Date.now() / 1000 + offset;
            document.querySelectorAll("[data-expires-at]").forEach(function (td) {
              td.textContent = duration(Math.max(parseFloat(td.dataset.expiresAt) - now, 0));
            });
          }

          function revokeForm(table, row) {
            var form = document.createElement("form");
            form.className = "revoke";
            form.method = "post";
            form.action = table.dataset.revokeUrl;
            [["resource", row.resource], ["slot", row.slot], ["token", ""]].forEach(function (pair) {
              var input = document.createElement("input");
              input.type = "hidden";
              input.name = pair[0];
              input.value = pair[1];
              form.appendChild(input);
            });
            var button = document.createElement("button");
            button.type = "submit";
            button.textContent = "Revoke";
            form.appendChild(button);
            return form;
          }

          function buildRow(table, row) {
            var tr = document.createElement("tr");
            var fields = ["resource", "slot", "owner", "token", "highest", "state", "remaining"];
            if (table.dataset.actions === "true") fields.push("action");
            tr.dataset.key = row.key;
            fields.forEach(function (field) {
              var td = document.createElement("td");
              td.dataset.field = field;
              tr.appendChild(td);
            });
            var link = document.createElement("a");
            link.href = table.dataset.resourceUrl + "?name=" + encodeURIComponent(row.resource) + "&slot=" + row.slot;
            link.textContent = row.resource;
            cell(tr, "resource").appendChild(link);
            cell(tr, "slot").textContent = row.slot;
            if (table.dataset.actions === "true") cell(tr, "action").appendChild(revokeForm(table, row));
            return tr;
          }

          function fillRow(tr, row) {
            tr.className = "state-" + row.state;
            ["owner", "token", "highest", "state"].forEach(function (field) {
              cell(tr, field).textContent = text(row[field]);
            });
            var left = cell(tr, "remaining");
            if (row.expires_at === null) {
              delete left.dataset.expiresAt;
              left.textContent = text(null);
            } else {
              left.dataset.expiresAt = row.expires_at;
            }
            var form = tr.querySelector("form.revoke");
            if (form) {
              form.hidden = row.state === "free";
              form.elements.token.value = row.token === null ? "" : row.token;
            }
          }

          // The rows in place: each kept by its key, new ones built, gone ones removed, in the server's order.
          function updateRows(table, rows) {
            var body = table.tBodies[0];
            var old = new Map();
            Array.prototype.forEach.call(body.rows, function (tr) { old.set(tr.dataset.key, tr); });
            rows.forEach(function (row) {
              var tr = old.get(row.key) || buildRow(table, row);
              old.delete(row.key);
              fillRow(tr, row);
              body.appendChild(tr);
            });
            old.forEach(function (tr) { body.removeChild(tr); });
            var empty = table.nextElementSibling;
            if (empty && empty.classList.contains("empty")) empty.hidden = rows.length > 0;
            tick();
          }

          function poll(element, url, apply) {
            var every = parseFloat(element.dataset.pollEvery) * 1000;
            var status = element.querySelector(".live-status");
            function run() {
              fetch(url(), { headers: { Accept: "application/json" }, credentials: "same-origin" })
                .then(function (response) {
                  if (!response.ok) return response.text().then(function (message) { throw new Error(message.trim()); });
                  return response.json();
                })
                .then(function (data) {
                  offset = data.now - Date.now() / 1000;
                  apply(data);
                  if (status) status.textContent = "live, every " + element.dataset.pollEvery + " s";
                })
                .catch(function (error) { if (status) status.textContent = "not updated: " + error.message; })
                .then(function () { setTimeout(run, every); });
            }
            setTimeout(run, every);
          }

          function refreshSvg(element) {
            fetch(element.dataset.svgUrl, { credentials: "same-origin" })
              .then(function (response) {
                if (!response.ok) throw new Error(String(response.status));
                return response.text();
              })
              .then(function (markup) {
                var svg = new DOMParser().parseFromString(markup, "image/svg+xml").documentElement;
                if (svg.nodeName !== "svg") return;
                element.querySelector(".timeline").replaceChildren(document.importNode(svg, true));
              })
              .catch(function () {});
          }

          function eventRow(event) {
            var tr = document.createElement("tr");
            tr.className = "kind-" + event.kind;
            tr.dataset.id = event.cells[0];
            event.cells.forEach(function (value) {
              var td = document.createElement("td");
              td.textContent = text(value);
              tr.appendChild(td);
            });
            return tr;
          }

          // Event ids compared as the decimal text the Id cell holds (a JSON number loses digits past 2**53).
          function compareIds(a, b) { return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0); }

          // The newest events (the window the server read anew) merged into the table: each id once, in id order,
          // the newest data-limit kept. An event that committed after one with a greater id lands in its place.
          // Whether a row was added.
          function mergeEvents(element, events) {
            var body = element.querySelector("table.events").tBodies[0];
            var rows = new Map();
            Array.prototype.forEach.call(body.rows, function (tr) { rows.set(tr.dataset.id, tr); });
            var added = false;
            events.forEach(function (event) {
              if (rows.has(event.cells[0])) return;
              rows.set(event.cells[0], eventRow(event));
              added = true;
            });
            if (!added) return false;
            var ids = Array.from(rows.keys()).sort(compareIds);
            var keep = Math.max(ids.length - parseInt(element.dataset.limit, 10), 0);
            ids.forEach(function (id, index) {
              var tr = rows.get(id);
              if (index >= keep) body.appendChild(tr);
              else if (tr.parentNode) body.removeChild(tr);
            });
            return true;
          }

          var listing = document.getElementById("resources");
          if (listing) {
            poll(listing, function () { return listing.dataset.pollUrl; }, function (data) {
              updateRows(listing.querySelector("table.rows"), data.rows);
              listing.querySelector(".count").textContent = data.count;
            });
          }

          // A resource's page: its slots follow the store; its events too when it shows the newest (a page of
          // history stays as it was read).
          var timeline = document.getElementById("timeline-page");
          if (timeline) {
            poll(timeline, function () { return timeline.dataset.pollUrl; }, function (data) {
              updateRows(timeline.querySelector("table.rows"), data.rows);
              if (timeline.dataset.events === "newest" && mergeEvents(timeline, data.events)) refreshSvg(timeline);
            });
          }

          tick();
          setInterval(tick, 200);
        })();
      JS
    end
  end
end
