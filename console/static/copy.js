// Copies the value of the field a button's data-copy names, and says so
// beside the button.
document.addEventListener("click", function (e) {
  var b = e.target.closest("button[data-copy]");
  if (!b) return;
  var field = document.getElementById(b.getAttribute("data-copy"));
  var said = b.parentElement.querySelector(".copied");
  var done = function (msg) { if (said) said.textContent = msg; };
  field.select();
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(field.value).then(function () { done("Copied."); }, function () { done("Select the link and copy it."); });
  } else {
    done(document.execCommand("copy") ? "Copied." : "Select the link and copy it.");
  }
});
