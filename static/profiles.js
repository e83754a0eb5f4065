// Profile form and first-run wizard: show only the fields the chosen backend can enforce,
// the bypass confirmation only for bypassPermissions, the folder picker's buttons and the
// wizard's "Check" buttons for an agent installed off PATH.
// Without this script every field shows and the server says what does not fit.
(function () {
  "use strict";

  var BYPASS = "bypassPermissions";

  function each(root, selector, fn) {
    Array.prototype.forEach.call(root.querySelectorAll(selector), fn);
  }

  function chosen(form, name) {
    var field = form.querySelector("select[name=" + name + "], input[name=" + name + "]:checked");
    return field ? field.value : "";
  }

  // Hidden fields are disabled too, so the form does not send what the backend ignores.
  function showPart(part, on) {
    part.hidden = !on;
    each(part, "input, select, textarea", function (control) {
      control.disabled = !on;
    });
  }

  function syncBackend(form) {
    var backends;
    try {
      backends = JSON.parse(form.getAttribute("data-backends") || "{}");
    } catch (err) {
      return;
    }
    var select = form.querySelector("select[name=backend]");
    var info = select ? backends[select.value] : null;
    if (!info) {
      return;
    }
    each(form, "[data-needs]", function (part) {
      // A field the server rejected stays in view with its message until it is fixed.
      var wanted = info.caps.indexOf(part.getAttribute("data-needs")) >= 0;
      showPart(part, wanted || part.querySelector(".field-error") !== null);
    });
    var modes = form.querySelector("select[name=permission_mode]");
    if (modes) {
      each(modes, "option", function (option) {
        option.hidden = option.disabled = info.modes.indexOf(option.value) < 0;
      });
      if (modes.selectedOptions.length && modes.selectedOptions[0].disabled) {
        modes.value = "default";
      }
    }
    each(form, "[data-login-for]", function (hint) {
      hint.hidden = hint.getAttribute("data-login-for") !== select.value;
    });
    var model = form.querySelector("input[name=model]");
    if (model) {
      model.setAttribute("list", "models-" + select.value);
    }
  }

  function syncMode(form) {
    each(form, "[data-bypass-confirm]", function (part) {
      showPart(part, chosen(form, "permission_mode") === BYPASS);
    });
  }

  // The wizard's checkbox names the file the chosen agent reads.
  function syncFile(form) {
    var radio = form.querySelector("input[name=backend]:checked");
    var file = radio ? radio.getAttribute("data-file") : "";
    if (file) {
      each(form, "[data-instructions-file]", function (span) {
        span.textContent = file;
      });
    }
  }

  // The wizard's untouched template names the folder chosen, not the one first shown
  // (the server does the same on submit); text the user edited is left alone.
  function fillTemplate(template, cwd) {
    var name = cwd.replace(/\/+$/, "").split("/").pop() || "Project";
    return template.split("{project}").join(name);
  }

  function syncTemplate(form) {
    var text = form.querySelector("textarea[data-template]");
    var folder = form.querySelector("input[name=cwd]");
    var shown = form.querySelector("input[name=template_cwd]");
    if (!text || !folder || !shown || shown.value === folder.value.trim()) {
      return;
    }
    var template = text.getAttribute("data-template");
    if (text.value.replace(/\r\n/g, "\n") !== fillTemplate(template, shown.value)) {
      return;
    }
    text.value = fillTemplate(template, folder.value.trim());
    shown.value = folder.value.trim();
  }

  function initForm(form) {
    function sync() {
      syncBackend(form);
      syncMode(form);
      syncFile(form);
      syncTemplate(form);
    }
    form.addEventListener("change", sync);
    sync();
  }

  function initPicker() {
    each(document, "[data-browse]", function (button) {
      button.hidden = false;
    });
    document.addEventListener("click", function (evt) {
      var button = evt.target.closest ? evt.target.closest("[data-pick], [data-picker-close]") : null;
      var picker = button ? button.closest(".folder-picker") : null;
      if (!picker) {
        return;
      }
      var input = document.getElementById(picker.getAttribute("data-for"));
      if (button.hasAttribute("data-pick") && input) {
        input.value = button.getAttribute("data-pick");
        input.dispatchEvent(new Event("change", { bubbles: true }));
      }
      picker.textContent = "";
      if (input) {
        input.focus();
      }
    });
    // A folder opened from the keyboard replaces the button that had focus; the new
    // listing's heading takes it, so a screen reader says where it now is.
    document.body.addEventListener("htmx:afterSwap", function (evt) {
      var target = evt.detail.target;
      var here = target && target.classList && target.classList.contains("folder-picker")
        ? target.querySelector(".dirs-here")
        : null;
      if (here) {
        here.focus();
      }
    });
  }

  // "I have it elsewhere": Check asks the server (htmx) and its answer lands in a live
  // region, so the button keeps focus and the result is read out once. Enter in the path
  // field checks it rather than sending the whole wizard.
  function initElsewhere() {
    each(document, "[data-check]", function (button) {
      button.hidden = false;
    });
    document.addEventListener("keydown", function (evt) {
      var field = evt.target;
      if (evt.key !== "Enter" || !field.hasAttribute || !field.hasAttribute("data-elsewhere")) {
        return;
      }
      var button = field.parentNode.querySelector("[data-check]");
      if (button && !button.hidden) {
        evt.preventDefault();
        button.click();
      }
    });
    // A path that checks out brings a ticked radio: the form follows it as if clicked.
    document.body.addEventListener("htmx:afterSwap", function (evt) {
      var target = evt.detail.target;
      var radio = target && target.classList && target.classList.contains("elsewhere-result")
        ? target.querySelector("input[type=radio]")
        : null;
      if (radio) {
        radio.dispatchEvent(new Event("change", { bubbles: true }));
      }
    });
  }

  function init() {
    each(document, "#profile-form, #wizard", initForm);
    initPicker();
    initElsewhere();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
