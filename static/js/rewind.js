// "Rewind files to here" on a message: asks the server which files a rewind would change
// (a dry run), lists them in a confirm dialog, and rewinds when the user says so. The
// rewind event that follows arrives over SSE like any other item.
(function () {
  "use strict";

  var A = window.Angelia;

  var QUOTE_CHARS = 160;

  function initRewind() {
    var log = document.getElementById("transcript");
    var dialog = document.getElementById("rewind-dialog");
    if (!log || !dialog || typeof dialog.showModal !== "function" || !window.fetch) {
      return;
    }
    var url = dialog.getAttribute("data-url");
    var cwd = (dialog.getAttribute("data-cwd") || "").replace(/\/+$/, "");
    var seqBox = document.getElementById("rewind-seq");
    var quote = document.getElementById("rewind-quote");
    var status = document.getElementById("rewind-status");
    var files = document.getElementById("rewind-files");
    var stats = document.getElementById("rewind-stats");
    var go = document.getElementById("rewind-go");
    var cancel = document.getElementById("rewind-cancel");
    // The message asked about, the button that asked, and a counter that lets a late
    // answer to an earlier question be ignored.
    var seq = 0;
    var opener = null;
    var asked = 0;

    // The page has this dialog only for a backend that can rewind: the actions show now.
    log.classList.add("can-rewind");

    function relative(path) {
      return cwd && path.indexOf(cwd + "/") === 0 ? path.slice(cwd.length + 1) : path;
    }

    function setStatus(message, isError) {
      status.textContent = message;
      status.classList.toggle("is-error", !!isError);
    }

    // Nothing (more) to do: only the way out is left.
    function finished(message, isError) {
      setStatus(message, isError);
      go.hidden = true;
      cancel.textContent = "Close";
      cancel.focus();
    }

    function showFiles(result) {
      var paths = Array.isArray(result.files) ? result.files : [];
      if (!paths.length) {
        finished("No file changes to undo since this message.");
        return;
      }
      paths.forEach(function (path) {
        var li = document.createElement("li");
        var code = document.createElement("code");
        code.textContent = relative(String(path));
        code.title = String(path);
        li.appendChild(code);
        files.appendChild(li);
      });
      files.hidden = false;
      var ins = Number(result.insertions) || 0;
      var del = Number(result.deletions) || 0;
      if (ins || del) {
        stats.textContent = "+" + ins + " / −" + del + " lines";
        stats.hidden = false;
      }
      setStatus(
        paths.length === 1
          ? "This file goes back to how it was before the message:"
          : "These " + paths.length + " files go back to how they were before the message:"
      );
      go.hidden = false;
      go.disabled = false;
      go.focus();
    }

    function ask(dryRun) {
      asked += 1;
      var mine = asked;
      var fallback = dryRun ? "Could not check the files." : "The files were not rewound.";
      return A.postJson(url, { event_seq: seq, dry_run: dryRun }, fallback).then(function (r) {
        return mine === asked && dialog.open ? r : null;
      });
    }

    function open(button) {
      opener = button;
      seq = parseInt(button.getAttribute("data-rewind-seq"), 10);
      seqBox.textContent = "#" + seq;
      var message = button.closest(".msg");
      var bubble = message ? message.querySelector(".bubble") : null;
      var said = bubble ? bubble.textContent.trim() : "";
      quote.textContent =
        said.length > QUOTE_CHARS ? said.slice(0, QUOTE_CHARS - 1) + "…" : said;
      quote.hidden = !said;
      while (files.firstChild) {
        files.removeChild(files.firstChild);
      }
      files.hidden = true;
      stats.hidden = true;
      go.hidden = true;
      cancel.textContent = "Cancel";
      setStatus("Checking which files would change…");
      dialog.showModal();
      cancel.focus();
      ask(true).then(function (r) {
        if (!r) {
          return;
        }
        if (r.ok) {
          showFiles(r.data);
        } else {
          finished(r.message, true);
        }
      });
    }

    log.addEventListener("click", function (evt) {
      var button = evt.target.closest ? evt.target.closest(".rewind-act[data-rewind-seq]") : null;
      if (button) {
        open(button);
      }
    });

    go.addEventListener("click", function () {
      go.disabled = true;
      setStatus("Rewinding…");
      ask(false).then(function (r) {
        if (!r) {
          return;
        }
        if (r.ok) {
          dialog.close("done");
        } else {
          finished(r.message, true);
        }
      });
    });

    // Enter and Escape belong to the dialog here, not to the page's shortcuts (which
    // answer approvals); Escape still closes it.
    dialog.addEventListener("keydown", function (evt) {
      if (evt.key === "Enter" || evt.key === "Escape") {
        evt.stopPropagation();
      }
    });

    dialog.addEventListener("close", function () {
      // A question still on its way is answered into a closed dialog: ignored.
      asked += 1;
      if (opener && document.body.contains(opener)) {
        opener.focus();
      }
    });
  }

  A.initRewind = initRewind;
})();
