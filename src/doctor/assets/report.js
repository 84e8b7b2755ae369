(function () {
  var b = document.body, q = function (s) { return document.querySelectorAll(s).length; };
  b.dataset.svgCount = q('svg.chart');
  b.dataset.seriesCount = q('#utilization-chart .series');
  b.dataset.findingCount = q('#findings li.finding');
  b.dataset.ready = '1';
})();
