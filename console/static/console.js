// Gateway console: the little the pages do with a script, from this file
// only (the Content-Security-Policy allows no inline script). Every page
// works without it.
"use strict";

// A button with data-copy copies the value of the field it names to the
// clipboard and says so in the element named by data-status. It is
// hidden until this script shows it.
document.querySelectorAll("button[data-copy]").forEach(function (button) {
	var field = document.getElementById(button.dataset.copy);
	var status = document.getElementById(button.dataset.status);
	if (!field) {
		return;
	}
	function said(ok) {
		if (status) {
			status.textContent = ok ? "Copied to the clipboard." : "Not copied: select it and copy it yourself.";
		}
	}
	function byHand() {
		field.focus();
		field.select();
		var ok = false;
		try {
			ok = document.execCommand("copy");
		} catch (e) {
			ok = false;
		}
		said(ok);
	}
	button.hidden = false;
	button.addEventListener("click", function () {
		if (navigator.clipboard && window.isSecureContext) {
			navigator.clipboard.writeText(field.value).then(function () { said(true); }, byHand);
		} else {
			byHand();
		}
	});
});
