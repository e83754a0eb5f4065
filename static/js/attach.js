// Images attached to the next message: the "Attach image" button, a paste into the
// composer and files dropped on the composer or the transcript add them to a row of
// thumbnails under the message box. Each is checked here (type, size, count) before
// anything is sent; a message with images goes to the JSON API by fetch, since the htmx
// form sends text only.
(function () {
  "use strict";

  var A = window.Angelia;

  // As app/services/sessions/images.py accepts them.
  var TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
  var MAX_BYTES = 5 * 1024 * 1024;
  var MAX_IMAGES = 10;

  // How many images wait to go with the next message (composer.js asks on Enter).
  A.attachedCount = function () {
    return 0;
  };

  function hasFiles(evt) {
    var types = evt.dataTransfer ? evt.dataTransfer.types : null;
    return !!types && Array.prototype.indexOf.call(types, "Files") !== -1;
  }

  // The files of a paste or a drop: its file list, else its file items.
  function filesOf(transfer) {
    if (!transfer) {
      return [];
    }
    var files = Array.prototype.slice.call(transfer.files || []);
    if (files.length || !transfer.items) {
      return files;
    }
    return Array.prototype.slice
      .call(transfer.items)
      .filter(function (item) {
        return item.kind === "file";
      })
      .map(function (item) {
        return item.getAsFile();
      })
      .filter(Boolean);
  }

  function megabytes(bytes) {
    return (bytes / (1024 * 1024)).toFixed(1) + " MB";
  }

  // A pasted screenshot has no useful name of its own.
  function nameOf(file) {
    return file.name || "pasted image";
  }

  function readDataUrl(file) {
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () {
        resolve(String(reader.result));
      };
      reader.onerror = function () {
        reject(reader.error);
      };
      reader.readAsDataURL(file);
    });
  }

  function initAttach() {
    var form = document.getElementById("composer");
    var tray = document.getElementById("attach");
    var list = document.getElementById("attach-list");
    var input = document.getElementById("attach-input");
    var button = document.getElementById("attach-btn");
    var text = document.getElementById("composer-text");
    var errorBox = document.getElementById("composer-error");
    var log = document.getElementById("transcript");
    if (!form || !tray || !list || !input || !text || !window.fetch || !window.FileReader) {
      return;
    }
    var url = tray.getAttribute("data-url");
    // Each {name, type, dataUrl}; reading is asynchronous, so files still being read
    // count against the limit too.
    var images = [];
    var reading = 0;
    var sending = false;
    tray.hidden = false;

    A.attachedCount = function () {
      return images.length;
    };

    function say(message) {
      if (errorBox) {
        errorBox.textContent = message;
      }
    }

    function render() {
      while (list.firstChild) {
        list.removeChild(list.firstChild);
      }
      images.forEach(function (image, i) {
        var label = "image " + (i + 1) + " (" + image.name + ")";
        var item = document.createElement("li");
        item.className = "attach-item";
        var img = document.createElement("img");
        img.src = image.dataUrl;
        img.alt = "Attached " + label;
        img.title = image.name;
        var remove = document.createElement("button");
        remove.type = "button";
        remove.className = "attach-remove";
        remove.setAttribute("data-index", String(i));
        remove.setAttribute("aria-label", "Remove " + label);
        remove.title = "Remove";
        remove.textContent = "×";
        item.appendChild(img);
        item.appendChild(remove);
        list.appendChild(item);
      });
      tray.classList.toggle("has-images", images.length > 0);
    }

    // Checks each file, reads the good ones and shows them; says what was left out.
    function add(files) {
      var problems = [];
      var taken = [];
      files.forEach(function (file) {
        var name = nameOf(file);
        if (TYPES.indexOf(file.type) === -1) {
          problems.push(name + " is not a PNG, JPEG, GIF or WebP image.");
        } else if (file.size > MAX_BYTES) {
          problems.push(name + " is larger than 5 MB (" + megabytes(file.size) + ").");
        } else if (images.length + reading + taken.length >= MAX_IMAGES) {
          problems.push(name + " was left out: at most " + MAX_IMAGES + " images per message.");
        } else {
          taken.push(file);
        }
      });
      say(problems.join(" "));
      if (!taken.length) {
        return Promise.resolve();
      }
      reading += taken.length;
      return Promise.all(
        taken.map(function (file) {
          return readDataUrl(file).then(
            function (dataUrl) {
              return { name: nameOf(file), type: file.type, dataUrl: dataUrl };
            },
            function () {
              problems.push(nameOf(file) + " could not be read.");
              return null;
            }
          );
        })
      ).then(function (read) {
        reading -= taken.length;
        read.forEach(function (image) {
          if (image) {
            images.push(image);
          }
        });
        say(problems.join(" "));
        render();
      });
    }

    function removeAt(index) {
      images.splice(index, 1);
      render();
      // Focus stays in the row (the next image's ×), else goes back to the message box.
      var buttons = list.querySelectorAll(".attach-remove");
      var next = buttons[Math.min(index, buttons.length - 1)];
      (next || text).focus();
    }

    function send() {
      if (sending) {
        return;
      }
      sending = true;
      form.classList.add("is-sending");
      form.setAttribute("aria-busy", "true");
      var body = {
        text: text.value,
        images: images.map(function (image) {
          return { media_type: image.type, data: image.dataUrl.slice(image.dataUrl.indexOf(",") + 1) };
        }),
      };
      A.postJson(url, body, "The message was not sent.").then(function (result) {
        sending = false;
        form.classList.remove("is-sending");
        form.removeAttribute("aria-busy");
        if (!result.ok) {
          // Text and images stay, so the user can fix what the server refused.
          say(result.message);
          return;
        }
        images = [];
        render();
        A.composerSent();
      });
    }

    if (button) {
      button.addEventListener("click", function () {
        input.click();
      });
    }
    input.addEventListener("change", function () {
      var files = Array.prototype.slice.call(input.files || []);
      // Cleared, so choosing the same file again fires another change.
      input.value = "";
      add(files);
    });

    list.addEventListener("click", function (evt) {
      var remove = evt.target.closest ? evt.target.closest(".attach-remove") : null;
      if (remove) {
        removeAt(parseInt(remove.getAttribute("data-index"), 10));
      }
    });

    form.addEventListener("paste", function (evt) {
      var files = filesOf(evt.clipboardData);
      if (!files.length) {
        return;
      }
      // A copy from a web page can carry the image and its text: the text still pastes.
      var types = Array.prototype.slice.call(evt.clipboardData.types || []);
      if (types.indexOf("text/plain") === -1) {
        evt.preventDefault();
      }
      add(files);
    });

    // Files dropped on the composer or the transcript are attached; dropped anywhere
    // else on the page they are ignored instead of replacing the page.
    function inZone(node) {
      return node instanceof Node && (form.contains(node) || (log && log.contains(node)));
    }
    document.addEventListener("dragover", function (evt) {
      if (!hasFiles(evt)) {
        return;
      }
      evt.preventDefault();
      var zone = inZone(evt.target);
      evt.dataTransfer.dropEffect = zone ? "copy" : "none";
      form.classList.toggle("is-drop-target", zone);
    });
    document.addEventListener("dragleave", function (evt) {
      if (!inZone(evt.relatedTarget)) {
        form.classList.remove("is-drop-target");
      }
    });
    document.addEventListener("drop", function (evt) {
      if (!hasFiles(evt)) {
        return;
      }
      evt.preventDefault();
      form.classList.remove("is-drop-target");
      if (inZone(evt.target)) {
        add(filesOf(evt.dataTransfer));
        text.focus();
      }
    });

    // With images the message goes by fetch; the form's own (htmx) request is dropped.
    form.addEventListener("htmx:confirm", function (evt) {
      if (evt.detail.elt !== form || !(images.length || reading)) {
        return;
      }
      evt.preventDefault();
      if (reading) {
        say("Still reading the images; send again in a moment.");
      } else {
        send();
      }
    });
  }

  A.initAttach = initAttach;
})();
